import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Node, NodeMessage } from "node-red";
import { gateNodes, helper, type Msg } from "./support/nodeRed";
import { connectAsync } from "mqtt";
import { NodeRedProcess, ROOT } from "./support/nodeRedProcess";
import throughputGate from "../src/nodes/throughputGate";
import { admissionOf, ExampleRun, injectProps } from "./support/exampleRun";
import { readExample } from "./support/exampleFlow";
import { clearOfBoundary, QUIET, quietRecipientAt, THREE_ZONES } from "./support/threeZones";

/* eslint-disable @typescript-eslint/no-require-imports */
const coreNodes = [
  require("@node-red/nodes/core/function/10-function.js"),
  require("@node-red/nodes/core/common/20-inject.js"),
  require("@node-red/nodes/core/common/21-debug.js"),
  require("@node-red/nodes/core/common/90-comment.js"),
];

type FlowNode = { id: string; type: string; name?: string };

function example(name: string): FlowNode[] {
  return JSON.parse(readFileSync(join(ROOT, "examples", name), "utf8")) as FlowNode[];
}

function byName(flow: FlowNode[], type: string, name: string): string {
  const found = flow.find((n) => n.type === type && n.name === name);
  assert.ok(found, `example has no ${type} named "${name}"`);
  return found.id;
}

describe("examples/", function () {
  this.timeout(60_000);

  describe("frequency-cap-demo.json", () => {
    before(() => helper.startServer());
    after(() => helper.stopServer());
    afterEach(() => helper.unload());

    it("caps marketing at 3 while OTPs and P0 pass, and sends a bad send to the Catch", async () => {
      const flow = example("frequency-cap-demo.json");
      await helper.load([...gateNodes, ...coreNodes], flow);
      const seen = (name: string) => {
        const list: Msg[] = [];
        (helper.getNode(byName(flow, "debug", name)) as Node).on("input", (m: NodeMessage) => list.push(m as Msg));
        return list;
      };
      const allowed = seen("allowed");
      const skipped = seen("skipped");
      const errors = seen("error");
      const press = async (name: string, times = 1) => {
        for (let i = 0; i < times; i++) {
          const before = allowed.length + skipped.length + errors.length;
          (helper.getNode(byName(flow, "inject", name)) as Node).receive({});
          for (let t = 0; t < 200 && allowed.length + skipped.length + errors.length === before; t++) await new Promise((r) => setTimeout(r, 5));
        }
      };
      await press("OTP SMS to alice", 3);
      await press("marketing SMS to alice", 5);
      await press("P0 alert to alice");
      await press("send without recipient");
      assert.equal(allowed.length, 3 + 3 + 1);
      assert.equal(skipped.length, 2);
      assert.ok(skipped.every((m) => (m.admission as { cap_id: string }).cap_id === "marketing-sms"));
      assert.equal((allowed[allowed.length - 1]?.admission as { reason: string }).reason, "exempt");
      assert.equal(errors.length, 1);
      assert.match((errors[0]?.error as { message: string }).message, /recipient/);
    });
  });

  describe("admission-chain.json", () => {
    before(() => helper.startServer());
    after(() => helper.stopServer());
    afterEach(() => helper.unload());

    it("skips duplicates and opt-outs before the cap, releases a failed send, and gives back marks on a cap refusal", async () => {
      const flow = example("admission-chain.json");
      await helper.load([...gateNodes, ...coreNodes], flow);
      const outputs = ["delivered", "released (provider failed)", "skipped: opted out / duplicate", "skipped: capped", "error"];
      const seen = new Map<string, Msg[]>();
      for (const name of outputs) {
        const list: Msg[] = [];
        seen.set(name, list);
        (helper.getNode(byName(flow, "debug", name)) as Node).on("input", (m: NodeMessage) => list.push(m as Msg));
      }
      const total = () => [...seen.values()].reduce((n, l) => n + l.length, 0);
      const press = async (name: string, expectOutput = true) => {
        const before = total();
        (helper.getNode(byName(flow, "inject", name)) as Node).receive({});
        if (!expectOutput) return new Promise((r) => setTimeout(r, 100));
        for (let t = 0; t < 400 && total() === before; t++) await new Promise((r) => setTimeout(r, 5));
        assert.ok(total() > before, `"${name}" produced nothing`);
      };
      const reasonsOf = (name: string) => (seen.get(name) ?? []).map((m) => (m.admission as { reason: string }).reason);

      await press("marketing SMS to alice");
      await press("same body again, keys reordered");
      assert.deepEqual(reasonsOf("skipped: opted out / duplicate"), ["duplicate_content"]);
      await press("marketing SMS the provider FAILs");
      assert.equal(seen.get("released (provider failed)")?.length, 1);
      assert.equal((seen.get("released (provider failed)")?.[0]?.admission as { trail: { refunded?: number }[] }).trail.at(-1)?.refunded, 2);
      await press("new marketing SMS to alice");
      await press("new marketing SMS to alice");
      await press("new marketing SMS to alice");
      assert.equal(seen.get("delivered")?.length, 3, "the released send did not use up one of the three marketing slots");
      assert.deepEqual(reasonsOf("skipped: capped"), ["frequency_capped"]);
      await press("bob texts STOP", false);
      await press("marketing SMS to bob");
      assert.equal(reasonsOf("skipped: opted out / duplicate").at(-1), "opted_out");
      await press("bob opts back in", false);
      await press("marketing SMS to bob");
      assert.equal(seen.get("delivered")?.at(-1)?.recipient, "bob");
      await press("send without recipient");
      assert.match(((seen.get("error")?.[0]?.error) as { message: string }).message, /recipient/);
    });
  });

  describe("throughput.json", () => {
    before(() => helper.startServer());
    after(() => helper.stopServer());
    afterEach(() => helper.unload());

    it("skips what is over 10/s with the exact wait, paces a burst in the queue, and resets and flushes held msgs", async () => {
      const flow = example("throughput.json");
      await helper.load([...gateNodes, throughputGate, ...coreNodes], flow);
      const seen = (name: string) => {
        const list: Msg[] = [];
        (helper.getNode(byName(flow, "debug", name)) as Node).on("input", (m: NodeMessage) => list.push(m as Msg));
        return list;
      };
      const [queued, reset, passed, skipped, errors] = ["queue: allowed", "queue: skipped (reset)", "skip: allowed", "skip: skipped", "error"].map(seen) as Msg[][];
      const press = (name: string) => (helper.getNode(byName(flow, "inject", name)) as Node).receive({});
      const until = async (done: () => boolean) => {
        for (let t = 0; t < 400 && !done(); t++) await new Promise((r) => setTimeout(r, 5));
      };
      press("30 SMS for acme → skip");
      await until(() => passed.length + skipped.length === 30);
      assert.equal(passed.length, 10);
      assert.equal(skipped.length, 20);
      assert.ok(skipped.every((m) => (m.admission as { reason: string; retry_after_seconds: number }).reason === "throughput_exceeded"
        && (m.admission as { retry_after_seconds: number }).retry_after_seconds <= 0.1));
      press("30 SMS for acme → queue");
      await until(() => queued.length >= 5);
      await new Promise((r) => setTimeout(r, 250));
      press("reset acme's held SMS");
      await until(() => queued.length + reset.length === 30);
      assert.ok(queued.length >= 5 && queued.length <= 9, `${queued.length} paced before the reset`);
      assert.ok(reset.every((m) => (m.admission as { reason: string }).reason === "reset"));
      press("30 SMS for acme → queue");
      await new Promise((r) => setTimeout(r, 100));
      press("flush acme's held SMS");
      await until(() => queued.length + reset.length === 60);
      assert.equal(queued.length + reset.length, 60, "every msg left, none lost");
      assert.equal(errors.length, 0);
    });
  });

  describe("quiet-hours.json", () => {
    before(() => helper.startServer());
    after(() => helper.stopServer());
    afterEach(() => helper.unload());

    it("of aiko (Tokyo), ngozi (Lagos) and pat (Phoenix), holds exactly the one in quiet hours now until 06:00 in their zone plus at most the jitter; the skip gate skips that one", async () => {
      const run = await ExampleRun.load(readExample("quiet-hours.json"));
      const gates = run.flow.filter((n) => n.type === "quiet-hours-gate");
      assert.deepEqual(gates.map((g) => [g.disposition, g.start, g.end, g.days]), [
        ["defer", QUIET.start, QUIET.end, [0, 1, 2, 3, 4, 5, 6]],
        ["skip", QUIET.start, QUIET.end, [0, 1, 2, 3, 4, 5, 6]],
      ], "the window THREE_ZONES reasons about, in both gates");
      const press = (recipient: string, zone: string, quiet: boolean) => run.press(`push to ${recipient} (${zone.split("/")[1]})`, quiet ? { holds: 1, outputs: 1 } : { outputs: 2 });
      for (const { recipient, zone } of THREE_ZONES) assert.equal(injectProps(run.flow.find((n) => n.name === `push to ${recipient} (${zone.split("/")[1]})`)).timezone, zone);

      await clearOfBoundary();
      const expected = quietRecipientAt(Date.now());
      for (const { recipient, zone } of THREE_ZONES) await press(recipient, zone, recipient === expected.recipient);
      const others = THREE_ZONES.map((z) => z.recipient).filter((r) => r !== expected.recipient);
      assert.deepEqual(run.of("defer gate: sent").map((m) => m.recipient).sort(), others);
      assert.deepEqual(run.of("skip gate: sent").map((m) => m.recipient).sort(), others);

      // the skip gate: out at once, with the window's end and the wait until then
      const [skipped] = run.of("skipped");
      assert.equal(run.of("skipped").length, 1);
      assert.equal(skipped?.recipient, expected.recipient);
      const verdict = admissionOf(skipped) as { reason: string; disposition: string; retry_after_seconds: number; trail: { at: string }[]; error: { details: { quiet_until: string } } };
      assert.equal(verdict.reason, "quiet_hours");
      assert.equal(verdict.disposition, "skip");
      assert.equal(verdict.error.details.quiet_until, new Date(expected.endsAt).toISOString(), `06:00 in ${expected.zone}`);
      const judgedAt = Date.parse(verdict.trail.at(-1)?.at ?? "");
      assert.equal(verdict.retry_after_seconds, Math.max(1, Math.ceil((expected.endsAt - judgedAt) / 1000)));

      // the defer gate: held in the cap-config's queue, to be released at the window's end plus the jitter
      const queue = run.queueOf(run.id("quiet-hours-gate", "quiet hours: defer"));
      assert.equal(await queue.size(), 1);
      const releaseAt = await queue.nextDueAt();
      const jitterMs = Number(gates[0]?.jitter) * 1000;
      assert.ok(releaseAt !== null && releaseAt >= expected.endsAt && releaseAt < expected.endsAt + jitterMs,
        `release at ${releaseAt === null ? "never" : new Date(releaseAt).toISOString()}: not in [${new Date(expected.endsAt).toISOString()}, + ${jitterMs / 1000} s)`);
      assert.equal(run.of("defer gate: released").length, 0);
    });

    it("holds sam until their own quiet window ends, lets an exempt OTP through, and sends an unknown zone to the Catch", async () => {
      const run = await ExampleRun.load(readExample("quiet-hours.json"));
      // sam's window is the minute the function runs in: not the last instant of one, which the gate would judge in the next
      if (new Date().getUTCSeconds() >= 58) await new Promise((r) => setTimeout(r, 2500));
      await run.press("push to sam (quiet this minute)", { holds: 1 });
      assert.equal(run.total(), 0, "sam's push is held, not sent");
      await run.press("OTP to sam (exempt)");
      assert.deepEqual(run.of("defer gate: sent").map((m) => [m.recipient, admissionOf(m).reason]), [["sam", "exempt"]]);
      await run.press("push to Mars/Olympus");
      assert.match(String((run.of("error")[0]?.error as { message?: string }).message), /timezone.*Mars\/Olympus/);
      assert.equal(await run.queueOf(run.id("quiet-hours-gate", "quiet hours: defer")).size(), 1);
    });
  });

  describe("ad-eligibility.json in a real Node-RED process, over real MQTT and HTTP", () => {
    const red = new NodeRedProcess(join(ROOT, "examples", "ad-eligibility.json"));
    before(() => red.start());
    after(async () => {
      await red.stop();
      red.cleanUp();
    });

    it("answers a bid request, and impressions published to the broker change the next answer (a repeated event counts once)", async () => {
      // a recipient of this run's own: other suites may publish to the same broker topic
      const viewer = `viewer-${Date.now()}-${Math.random().toString(16).slice(2)}`;
      const candidates = [
        { id: "ad1", ad_id: "ad1", campaign_id: "c1", category: "sports" },
        { id: "ad2", ad_id: "ad2", campaign_id: "c1", category: "news" },
      ];
      const ask = async (body: unknown) => {
        const res = await fetch(`${red.baseUrl}/eligibility`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
        return { status: res.status, body: await res.json() as Record<string, Record<string, unknown>> };
      };
      const first = await ask({ recipient: viewer, candidates });
      assert.equal(first.status, 200);
      assert.deepEqual(first.body.eligible, { ad1: true, ad2: true });
      assert.deepEqual(first.body.remaining, { ad1: 3, ad2: 3 });

      const broker = await connectAsync("mqtt://127.0.0.1:1883", { clientId: `sendgate-test-${process.pid}-${Date.now()}` });
      const publish = (eventId: string) => broker.publishAsync("ads/impressions", JSON.stringify({
        event_id: `${viewer}-${eventId}`, recipient: viewer, ad_id: "ad1", campaign_id: "c1", category: "sports",
      }), { qos: 1 });
      const answerOnce = async (ready: (body: Record<string, Record<string, unknown>>) => boolean) => {
        let answer = await ask({ recipient: viewer, candidates });
        for (let t = 0; t < 100 && !ready(answer.body); t++) {
          await new Promise((r) => setTimeout(r, 50));
          answer = await ask({ recipient: viewer, candidates });
        }
        return answer.body;
      };
      try {
        for (const id of ["e1", "e2", "e2"]) await publish(id);
        const twice = await answerOnce((body) => body.remaining?.ad1 !== 3 && body.remaining?.ad1 !== 2);
        assert.deepEqual(twice.remaining, { ad1: 1, ad2: 3 }, "e2 delivered twice counted once");
        await publish("e3");
        const full = await answerOnce((body) => body.eligible?.ad1 === false);
        assert.deepEqual(full.eligible, { ad1: false, ad2: true }, "three distinct impressions fill ad1's day");
        assert.deepEqual(full.remaining, { ad1: 0, ad2: 3 }, "ad2 shares campaign c1 (10 a week, 7 left) but its own 3 a day binds");
        assert.equal((full.blocked?.ad1 as { cap_id: string }).cap_id, "ad-daily");
      } finally {
        await broker.endAsync();
      }
      const bad = await ask({ recipient: viewer, candidates: [{ id: "x" }, "not an object"] });
      assert.equal(bad.status, 400);
      assert.match(String(bad.body.error), /candidates\[1\]/);
    });
  });
});
