import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodeRedProcess } from "./support/nodeRedProcess";
import { sleep } from "./support/redis";

/**
 * A memory store in a real Node-RED process killed with SIGKILL: the held msgs
 * and the counters on disk are always what is still owed, so a crash neither
 * repeats a release nor loses a held msg.
 */
function flow(reportUrl: string): object[] {
  return [
    { id: "tab1", type: "tab", label: "crash" },
    {
      id: "cfg", type: "cap-config", name: "memory caps", store: "memory", hashRecipients: false,
      rules: [
        { id: "d", scope: "channel", channel: "sms", max_count: 1, window_seconds: 3, disposition: "defer" },
        { id: "daily-email", scope: "channel", channel: "email", max_count: 1, window_seconds: 86400 },
      ],
    },
    { id: "fanIn", type: "http in", z: "tab1", x: 100, y: 100, url: "/fan", method: "post", wires: [["fan"]] },
    {
      id: "fan", type: "function", z: "tab1", x: 250, y: 100, outputs: 2,
      func: "const out = msg.payload.recipients.flatMap(r => [1, 2].map(n => ({ recipient: r, channel: 'sms', messageId: r + '-' + n, payload: { note: 'for ' + r } })));\n"
        + "return [out, { ...msg, payload: { queued: out.length } }];",
      wires: [["gate"], ["fanReply"]],
    },
    { id: "fanReply", type: "http response", z: "tab1", x: 400, y: 160, wires: [] },
    { id: "gate", type: "frequency-cap-gate", z: "tab1", x: 400, y: 100, config: "cfg", deferMax: 600, wires: [[], [], ["label"]] },
    {
      id: "label", type: "function", z: "tab1", x: 550, y: 100, outputs: 1,
      func: "msg.payload = { id: msg.messageId, release_id: msg.admission.release_id };\nmsg.headers = { 'content-type': 'application/json' };\nreturn msg;",
      wires: [["report"]],
    },
    { id: "report", type: "http request", z: "tab1", x: 700, y: 100, method: "POST", ret: "txt", url: reportUrl, wires: [[]] },
    { id: "sendIn", type: "http in", z: "tab1", x: 100, y: 200, url: "/send", method: "post", wires: [["sup"]] },
    { id: "sup", type: "suppression-gate", z: "tab1", x: 250, y: 200, config: "cfg", httpResponse: true, duplicateWindow: 0,
      recipient: "payload.recipient", recipientType: "msg", channel: "payload.channel", channelType: "msg", wires: [["cap"], ["sendReply"]] },
    { id: "cap", type: "frequency-cap-gate", z: "tab1", x: 400, y: 200, config: "cfg", httpResponse: true,
      recipient: "payload.recipient", recipientType: "msg", channel: "payload.channel", channelType: "msg", wires: [["sendReply"], ["sendReply"], []] },
    { id: "sendReply", type: "http response", z: "tab1", x: 550, y: 200, wires: [] },
  ];
}

/** One msg out of a flow's report node: what it was, and when it reached the test's server. */
interface Released {
  id: string;
  release_id: string;
  at: number;
}

/**
 * The suite's flow, written to a flows file of its own, whose released msgs
 * are POSTed to a server of the test's (the record of what left, kept across
 * the kills and restarts of the process).
 */
function reportingFlow(dirPrefix: string, flowOf: (reportUrl: string) => object[]): { released: Released[]; flowFile: () => string } {
  const dir = mkdtempSync(join(tmpdir(), dirPrefix));
  const released: Released[] = [];
  let server: Server | undefined;
  let flowFile = "";
  before(async () => {
    const listening = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => { body += c.toString(); });
      req.on("end", () => {
        released.push({ ...(JSON.parse(body) as { id: string; release_id: string }), at: Date.now() });
        res.end("ok");
      });
    });
    server = listening;
    await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
    const address = listening.address();
    const port = typeof address === "object" && address ? address.port : 0;
    flowFile = join(dir, "flows.json");
    writeFileSync(flowFile, JSON.stringify(flowOf(`http://127.0.0.1:${port}/released`)));
  });
  after(() => {
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { released, flowFile: () => flowFile };
}

describe("a memory store survives SIGKILL: held msgs never released twice nor lost, counters and the block list kept", function () {
  this.timeout(180_000);
  const { released, flowFile } = reportingFlow("sendgate-crash-", flow);

  async function fan(red: NodeRedProcess, recipients: string[]): Promise<void> {
    const res = await fetch(`${red.baseUrl}/fan`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ recipients }) });
    assert.deepEqual(await res.json(), { queued: recipients.length * 2 });
  }

  async function untilReleased(count: number, timeoutMs = 30_000): Promise<void> {
    const started = Date.now();
    while (released.length < count && Date.now() - started < timeoutMs) await sleep(100);
  }

  function assertOnce(expected: string[]): void {
    const ids = released.map((r) => r.id);
    const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
    assert.deepEqual(twice.slice(0, 5), [], `${twice.length} msgs released twice`);
    assert.deepEqual([...ids].sort(), [...expected].sort(), `released ${ids.length} of ${expected.length}`);
  }

  const recipients = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);

  /**
   * Until the gate holds `count` msgs (its cap-config's metrics): a burst the
   * gate has not taken in yet is msgs in flight, which SIGKILL loses in any
   * Node-RED flow; held ones are what the store owes.
   */
  async function untilHeld(red: NodeRedProcess, count: number, timeoutMs = 30_000): Promise<void> {
    const started = Date.now();
    let held = -1;
    while (Date.now() - started < timeoutMs) {
      const text = await (await fetch(`${red.baseUrl}/frequency-cap/cfg/metrics`)).text();
      held = Number(/^sendgate_held_msgs\{gate="gate"[^}]*\} (\d+)$/m.exec(text)?.[1] ?? -1);
      if (held >= count) return;
      await sleep(100);
    }
    assert.fail(`the gate holds ${held} msgs, not ${count}, after ${timeoutMs} ms`);
  }

  it("after a graceful stop with held msgs, a restart releases them once and a crash after that does not release them again", async () => {
    released.length = 0;
    const red = new NodeRedProcess(flowFile());
    try {
      await red.start();
      await fan(red, ["solo"]);
      await fan(red, recipients("burst", 2000));
      await sleep(500);
      await red.stop();
      await red.start();
      const owed = ["solo-2", ...recipients("burst", 2000).map((r) => `${r}-2`)];
      await untilReleased(owed.length);
      await sleep(500);
      assertOnce(owed);
      await red.kill();
      await red.start();
      await sleep(5000);
      assertOnce(owed);
    } finally {
      await red.stop();
      red.cleanUp();
    }
  });

  it("a crash while msgs are held loses none: the next start releases each once, and a crash after that repeats none", async () => {
    released.length = 0;
    const red = new NodeRedProcess(flowFile());
    try {
      await red.start();
      await fan(red, ["single"]);
      await fan(red, recipients("held", 2000));
      await untilHeld(red, 2001);
      await red.kill();
      await red.start();
      const owed = ["single-2", ...recipients("held", 2000).map((r) => `${r}-2`)];
      await untilReleased(owed.length);
      await sleep(500);
      assertOnce(owed);
      // the same held msg released again (ack lost) would carry the same release_id: here none repeats at all
      assert.equal(new Set(released.map((r) => r.release_id)).size, owed.length);
      await red.kill();
      await red.start();
      await sleep(5000);
      assertOnce(owed);
      const files = readdirSync(join(red.dir, "sendgate"));
      assert.ok(files.length > 0, "the memory store keeps its state in the user dir");
    } finally {
      await red.stop();
      red.cleanUp();
    }
  });

  it("keeps counters (snapshotted every few seconds) and a block-list change (at once) across a crash", async () => {
    const red = new NodeRedProcess(flowFile());
    const send = async (recipient: string) => {
      const res = await fetch(`${red.baseUrl}/send`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ recipient, channel: "email" }) });
      const body = await res.text();
      return { status: res.status, error: res.status === 429 || res.status === 403 ? (JSON.parse(body) as { error: string }).error : undefined };
    };
    try {
      await red.start();
      assert.equal((await send("counted")).status, 200);
      assert.deepEqual(await send("counted"), { status: 429, error: "FREQUENCY_CAP_EXCEEDED" });
      await sleep(6000);
      const listed = await fetch(`${red.baseUrl}/frequency-cap/cfg/suppressions`, {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ recipient: "blocked", channel: "email", reason: "STOP" }),
      });
      assert.equal(listed.status, 201);
      await red.kill();
      await red.start();
      assert.deepEqual(await send("counted"), { status: 429, error: "FREQUENCY_CAP_EXCEEDED" }, "the counter survived the crash");
      assert.deepEqual(await send("blocked"), { status: 403, error: "RECIPIENT_OPTED_OUT" }, "the opt-out survived the crash");
      assert.equal((await send("fresh")).status, 200);
      const text = readdirSync(join(red.dir, "sendgate")).map((f) => readFileSync(join(red.dir, "sendgate", f), "utf8")).join("\n");
      assert.ok(text.includes("blocked"));
    } finally {
      await red.stop();
      red.cleanUp();
    }
  });
});

/** A throughput-gate pacing msgs it holds itself (a local timer, leased in the journaled queue), in a process killed with SIGKILL. */
function pacingFlow(reportUrl: string): object[] {
  return [
    { id: "tab1", type: "tab", label: "pacing crash" },
    { id: "cfg", type: "cap-config", name: "memory ceiling", store: "memory", hashRecipients: false, rules: [] },
    { id: "paceIn", type: "http in", z: "tab1", x: 100, y: 100, url: "/pace", method: "post", wires: [["fan"]] },
    {
      id: "fan", type: "function", z: "tab1", x: 250, y: 100, outputs: 2,
      func: "const out = msg.payload.ids.map(id => ({ recipient: 'r-' + id, channel: 'sms', messageId: id }));\nreturn [out, { ...msg, payload: { queued: out.length } }];",
      wires: [["gate"], ["paceReply"]],
    },
    { id: "paceReply", type: "http response", z: "tab1", x: 400, y: 160, wires: [] },
    { id: "gate", type: "throughput-gate", z: "tab1", x: 400, y: 100, config: "cfg", rate: 20, interval: 1, burst: 1, disposition: "queue", maxWait: 60, wires: [["label"], [], []] },
    {
      id: "label", type: "function", z: "tab1", x: 550, y: 100, outputs: 1,
      func: "msg.payload = { id: msg.messageId, release_id: msg.admission.release_id ?? '' };\nmsg.headers = { 'content-type': 'application/json' };\nreturn msg;",
      wires: [["report"]],
    },
    { id: "report", type: "http request", z: "tab1", x: 700, y: 100, method: "POST", ret: "txt", url: reportUrl, wires: [[]] },
  ];
}

describe("a throughput-gate's paced msgs survive SIGKILL on the memory store: none lost, none released twice", function () {
  this.timeout(120_000);
  const { released, flowFile } = reportingFlow("sendgate-pace-crash-", pacingFlow);

  it("60 msgs paced at 20/s, killed after about a second: the restart releases the rest once, and a second crash repeats none", async () => {
    const red = new NodeRedProcess(flowFile());
    const ids = Array.from({ length: 60 }, (_, i) => `p${i}`);
    try {
      await red.start();
      const res = await fetch(`${red.baseUrl}/pace`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ids }) });
      assert.deepEqual(await res.json(), { queued: 60 });
      await sleep(1000);
      await red.kill();
      const before = released.length;
      assert.ok(before >= 5 && before < 60, `${before} released before the kill`);
      await red.start();
      const started = Date.now();
      while (released.length < 60 && Date.now() - started < 20_000) await sleep(100);
      await sleep(500);
      const got = released.map((r) => r.id);
      assert.deepEqual(got.filter((id, i) => got.indexOf(id) !== i), [], "none twice");
      assert.deepEqual([...got].sort(), [...ids].sort(), "none lost");
      // due again at once after the restart (the journal keeps no lease), not a lease's 30 s later
      const after = released.slice(before);
      assert.ok((after[0] as { at: number }).at - started < 10_000, "released soon after the restart");
      await red.kill();
      await red.start();
      await sleep(3000);
      assert.equal(released.length, 60, "a crash after they left repeats none");
    } finally {
      await red.stop();
      red.cleanUp();
    }
  });
});
