import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { connectAsync } from "mqtt";
import { EditorComms } from "../support/editorComms";
import { NodeRedProcess, nodeRedVersion, ROOT } from "../support/nodeRedProcess";
import { clearOfBoundary, quietRecipientAt, THREE_ZONES } from "../support/threeZones";

/**
 * The examples in a real Node-RED process, driven as a person would: inject
 * buttons pressed through the admin API, results read from the debug sidebar's
 * feed. Part of the subset .ci/run also runs on Node-RED 5 with Node 22.
 */
type FlowNode = { id: string; type: string; name?: string };

function exampleFile(name: string): string {
  return join(ROOT, "examples", name);
}

function injectId(file: string, name: string): string {
  const flow = JSON.parse(readFileSync(file, "utf8")) as FlowNode[];
  const found = flow.find((n) => n.type === "inject" && n.name === name);
  assert.ok(found, `no inject named "${name}"`);
  return found.id;
}

/** Starts Node-RED on the example, with a debug feed open; `run` presses and checks. */
function withExample(name: string, run: (ctx: { red: NodeRedProcess; comms: EditorComms; press: (inject: string, expectOutput?: boolean) => Promise<void> }) => Promise<void>): () => Promise<void> {
  return async () => {
    const file = exampleFile(name);
    const red = new NodeRedProcess(file, { debugMaxLength: 100_000 });
    try {
      await red.start();
      const comms = await EditorComms.connect(red.baseUrl);
      const press = async (inject: string, expectOutput = true): Promise<void> => {
        const before = comms.debug.length;
        const res = await fetch(`${red.baseUrl}/inject/${injectId(file, inject)}`, { method: "POST" });
        assert.equal(res.status, 200, `pressing "${inject}"`);
        if (expectOutput) await comms.until(before + 1);
        else await new Promise((r) => setTimeout(r, 300));
      };
      try {
        await run({ red, comms, press });
      } finally {
        comms.close();
      }
    } catch (err) {
      (err as Error).message += `\n--- Node-RED output ---\n${red.output}`;
      throw err;
    } finally {
      await red.stop();
      red.cleanUp();
    }
  };
}

const reasons = (list: Record<string, unknown>[]) => list.map((a) => a.reason);

describe(`examples in a real Node-RED ${nodeRedVersion()} on Node ${process.version} [real Node-RED]`, function () {
  this.timeout(60_000);

  it("frequency-cap-demo: marketing capped at 3, OTPs and P0 pass, a bad send reaches the Catch", withExample("frequency-cap-demo.json", async ({ comms, press }) => {
    for (let i = 0; i < 3; i++) await press("OTP SMS to alice");
    for (let i = 0; i < 5; i++) await press("marketing SMS to alice");
    await press("P0 alert to alice");
    await press("send without recipient");
    assert.equal(comms.of("allowed").length, 7);
    assert.deepEqual(reasons(comms.of("skipped")), ["frequency_capped", "frequency_capped"]);
    assert.equal(comms.of("allowed").at(-1)?.reason, "exempt");
    assert.match(String(comms.of("error")[0]?.message), /recipient/);
  }));

  it("admission-chain: duplicates and opt-outs before the cap, a failed send released, marks given back", withExample("admission-chain.json", async ({ comms, press }) => {
    await press("marketing SMS to alice");
    await press("same body again, keys reordered");
    assert.deepEqual(reasons(comms.of("skipped: opted out / duplicate")), ["duplicate_content"]);
    await press("marketing SMS the provider FAILs");
    assert.equal(comms.of("released (provider failed)").length, 1);
    for (let i = 0; i < 3; i++) await press("new marketing SMS to alice");
    assert.equal(comms.of("delivered").length, 3);
    assert.deepEqual(reasons(comms.of("skipped: capped")), ["frequency_capped"]);
    await press("bob texts STOP", false);
    await press("marketing SMS to bob");
    assert.equal(comms.of("skipped: opted out / duplicate").at(-1)?.reason, "opted_out");
    await press("bob opts back in", false);
    await press("marketing SMS to bob");
    assert.equal(comms.of("delivered").length, 4);
    await press("send without recipient");
    assert.match(String(comms.of("error")[0]?.message), /recipient/);
  }));

  it("throughput: 10 of a burst of 30 pass the skip gate, the queue gate paces all 30 out at 10/s, and the status says so", withExample("throughput.json", async ({ red, comms, press }) => {
    await press("30 SMS for acme → skip");
    await comms.until(30);
    assert.equal(comms.of("skip: allowed").length, 10);
    assert.deepEqual([...new Set(reasons(comms.of("skip: skipped")))], ["throughput_exceeded"]);
    assert.equal(comms.of("skip: skipped").length, 20);
    const started = Date.now();
    await press("30 SMS for acme → queue");
    await comms.until(60, 10_000);
    const took = Date.now() - started;
    assert.equal(comms.of("queue: allowed").length, 30);
    assert.ok(took >= 2000 && took < 5000, `paced over ${took} ms (burst 5, then 10/s)`);
    const gates = (JSON.parse(readFileSync(exampleFile("throughput.json"), "utf8")) as FlowNode[]).filter((n) => n.type === "throughput-gate");
    const skipGate = gates.find((n) => n.name?.startsWith("skip"))?.id ?? "";
    for (let i = 0; i < 50 && comms.lastStatus(skipGate)?.text !== "✓ 10 · ✗ 20"; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(comms.lastStatus(skipGate), { fill: "green", shape: "dot", text: "✓ 10 · ✗ 20" }, red.output);
  }));

  it("quiet-hours: of three zones 8 h apart, the one in quiet hours now is held by the defer gate and skipped by the skip gate; an OTP passes, a bad zone is caught", withExample("quiet-hours.json", async ({ red, comms, press }) => {
    await clearOfBoundary();
    const quiet = quietRecipientAt(Date.now());
    // each push goes to both gates: two msgs out, or one (the skip gate's) for the one held
    for (const { recipient, zone } of THREE_ZONES) {
      const before = comms.debug.length;
      await press(`push to ${recipient} (${zone.split("/")[1]})`);
      await comms.until(before + (recipient === quiet.recipient ? 1 : 2));
    }
    const others = THREE_ZONES.map((z) => z.recipient).filter((r) => r !== quiet.recipient);
    assert.deepEqual(comms.of("defer gate: sent").map((m) => m.recipient).sort(), others);
    assert.deepEqual(comms.of("skipped").map((m) => [m.recipient, (m.admission as { reason: string }).reason]), [[quiet.recipient, "quiet_hours"]]);
    assert.equal(((comms.of("skipped")[0]?.admission as { error: { details: { quiet_until: string } } }).error.details.quiet_until), new Date(quiet.endsAt).toISOString());
    await press("OTP to sam (exempt)");
    assert.equal((comms.of("defer gate: sent").at(-1)?.admission as { reason?: string }).reason, "exempt");
    await press("push to Mars/Olympus");
    assert.match(String(comms.of("error")[0]?.message), /timezone/);
    const gate = (JSON.parse(readFileSync(exampleFile("quiet-hours.json"), "utf8")) as FlowNode[]).find((n) => n.name === "quiet hours: defer");
    const expected = { fill: "green", shape: "dot", text: "✓ 3 · ✗ 0 · held 1 · caught 1" };
    for (let i = 0; i < 50 && comms.lastStatus(gate?.id ?? "")?.text !== expected.text; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(comms.lastStatus(gate?.id ?? ""), expected, red.output);
  }));

  it("direct-api-send: 202 five times, then 429 with Retry-After, 400 naming the field; the provider gets the five", withExample("direct-api-send.json", async ({ red, comms }) => {
    const post = (body: Record<string, unknown>) => fetch(`${red.baseUrl}/send`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ channel: "sms", category: "otp", ...body }),
    });
    for (let i = 0; i < 5; i++) assert.equal((await post({ recipient: "alice", body: `code ${i}` })).status, 202);
    const refused = await post({ recipient: "alice", body: "code 5" });
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get("retry-after")) > 0);
    assert.equal(((await refused.json()) as { error: string }).error, "FREQUENCY_CAP_EXCEEDED");
    const bad = await post({ body: "no recipient" });
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { message: string }).message, /^recipient: is required/);
    await comms.until(5);
    assert.deepEqual(comms.debug.map((d) => d.name), ["delivered", "delivered", "delivered", "delivered", "delivered"]);
  }));

  it("ad-eligibility: a bid request answered per candidate, impressions over MQTT counted once per event", withExample("ad-eligibility.json", async ({ red }) => {
    const viewer = `nr-viewer-${process.pid}-${Date.now()}`;
    const candidates = [{ id: "ad1", ad_id: "ad1", campaign_id: "c1", category: "sports" }, { id: "ad2", ad_id: "ad2", campaign_id: "c1", category: "news" }];
    const ask = async () => {
      const res = await fetch(`${red.baseUrl}/eligibility`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ recipient: viewer, candidates }) });
      assert.equal(res.status, 200);
      return (await res.json()) as { eligible: Record<string, boolean>; remaining: Record<string, number> };
    };
    assert.deepEqual((await ask()).eligible, { ad1: true, ad2: true });
    const broker = await connectAsync("mqtt://127.0.0.1:1883", { clientId: `sendgate-nr-${process.pid}-${Date.now()}` });
    try {
      for (const event of ["e1", "e2", "e2", "e3"]) {
        await broker.publishAsync("ads/impressions", JSON.stringify({ event_id: `${viewer}-${event}`, recipient: viewer, ad_id: "ad1", campaign_id: "c1", category: "sports" }), { qos: 1 });
      }
    } finally {
      await broker.endAsync();
    }
    let answer = await ask();
    for (let i = 0; i < 100 && answer.eligible.ad1 !== false; i++) {
      await new Promise((r) => setTimeout(r, 50));
      answer = await ask();
    }
    assert.deepEqual(answer.eligible, { ad1: false, ad2: true }, "three distinct impressions (one sent twice) fill ad1's day");
  }));

  it("campaign-batch: 5,000 contacts split, gated and joined into one report: 4,630 sent, 320 capped, 50 opted out", withExample("campaign-batch.json", async ({ red, comms, press }) => {
    const reports = () => comms.of("campaign report");
    const until = async (done: () => boolean | Promise<boolean>) => {
      for (let t = 0; t < 1000 && !(await done()); t++) await new Promise((r) => setTimeout(r, 20));
    };
    await press("① promo to contacts 1–300");
    await press("② 3 login codes each to contacts 301–320");
    await until(() => reports().length === 2);
    await press("③ contacts 4951–5000 text STOP", false);
    const config = (JSON.parse(readFileSync(exampleFile("campaign-batch.json"), "utf8")) as FlowNode[]).find((n) => n.type === "cap-config")?.id ?? "";
    const blocked = async () => ((await (await fetch(`${red.baseUrl}/frequency-cap/${config}/suppressions?count=500`)).json()) as { entries: unknown[] }).entries.length;
    await until(async () => (await blocked()) === 50);
    await press("④ evening promo to all 5,000");
    await until(() => reports().length === 3);
    assert.deepEqual(reports().map((r) => [r.campaign, r.sent, r.skipped]), [["morning-promo", 300, 0], ["login-codes", 60, 0], ["evening-promo", 4630, 370]]);
    assert.deepEqual(reports()[2]?.skipped_by, { "frequency_capped (marketing-sms-1-a-day)": 300, "frequency_capped (any-sms-3-a-day)": 20, opted_out: 50 });
  }));

  it("opt-out-keywords: STOP posted to the webhook as a form blocks the number, START unblocks it", withExample("opt-out-keywords.json", async ({ red, comms, press }) => {
    const text = (Body: string) => fetch(`${red.baseUrl}/sms/inbound`, {
      method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ From: "+15551234567", Body }).toString(),
    });
    await press("promo SMS to +15551234567");
    assert.equal((await text("STOP")).status, 200);
    await press("promo SMS to +15551234567");
    assert.equal((await text("start")).status, 200);
    await press("promo SMS to +15551234567");
    assert.deepEqual(comms.debug.map((d) => d.name), ["delivered", "skipped", "delivered"]);
    assert.equal((comms.of("skipped")[0]?.admission as { reason?: string } | undefined)?.reason, "opted_out");
  }));

  it("push-governor: the topic cap refuses alice's 3rd price-drop, P0 goes, the one in quiet hours now is held, no tier reaches the Catch", withExample("push-governor.json", async ({ comms, press }) => {
    for (let i = 0; i < 3; i++) await press("P2 price-drop to alice");
    await press("P0 passcode to alice");
    assert.deepEqual(comms.of("refused").map((m) => (m.admission as { cap_id?: string }).cap_id), ["per-topic"]);
    assert.equal((comms.of("sent").at(-1)?.admission as { reason?: string }).reason, "exempt");
    await clearOfBoundary();
    const quiet = quietRecipientAt(Date.now()).recipient;
    for (const { recipient, zone } of THREE_ZONES) await press(`P1 reminder to ${recipient} (${zone.split("/")[1]})`, recipient !== quiet);
    assert.deepEqual(comms.of("sent").map((m) => m.recipient).slice(3).sort(), THREE_ZONES.map((z) => z.recipient).filter((r) => r !== quiet).sort());
    await press("push without a tier");
    assert.match(String(comms.of("error")[0]?.message), /tier/);
  }));
});
