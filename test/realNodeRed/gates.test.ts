import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EditorComms } from "../support/editorComms";
import { NodeRedProcess, nodeRedVersion } from "../support/nodeRedProcess";

/**
 * Every node type deployed in a real Node-RED and driven over HTTP: a
 * suppression → frequency cap → quiet hours chain, the cap gate's record and
 * release modes, a held msg released by deferred, bad sends to Catch, and the
 * statuses the editor shows. Part of the subset .ci/run also runs on
 * Node-RED 5 with Node 22.
 */
const Z = "chain";
let y = 0;
const at = <T extends Record<string, unknown>>(node: T) => ({ z: Z, x: 200, y: (y += 40), ...node });

/** An http-in route whose JSON body `{ send: {…}, body }` becomes a send: its fields on the msg, the body as payload. */
function route(id: string, url: string, next: string[]): Record<string, unknown>[] {
  return [
    at({ id: `${id}-in`, type: "http in", url, method: "post", upload: false, wires: [[`${id}-read`]] }),
    at({ id: `${id}-read`, type: "function", func: "Object.assign(msg, msg.payload.send || {});\nmsg.payload = msg.payload.body;\nreturn msg;", outputs: 1, wires: [next] }),
  ];
}

/** Answers the HTTP request with what happened to the msg. */
function reply(id: string, outcome: string): Record<string, unknown> {
  return at({
    id, type: "function", outputs: 1, wires: [["respond"]],
    func: `msg.payload = { outcome: ${JSON.stringify(outcome)}, admission: msg.admission };\nmsg.statusCode = 200;\nreturn msg;`,
  });
}

const FLOW = [
  { id: Z, type: "tab", label: "every gate" },
  {
    id: "cfg", type: "cap-config", name: "caps", store: "memory",
    rules: [
      { id: "two", scope: "channel", channel: "sms", max_count: 2, window_seconds: 60 },
      { id: "push", scope: "channel", channel: "push", max_count: 1, window_seconds: 2, disposition: "defer" },
    ],
  },
  ...route("send", "/send", ["sup"]),
  at({ id: "sup", type: "suppression-gate", config: "cfg", wires: [["cap"], ["skipped"]] }),
  at({ id: "cap", type: "frequency-cap-gate", config: "cfg", wires: [["quiet"], ["skipped"], ["released"]] }),
  at({ id: "quiet", type: "quiet-hours-gate", config: "cfg", disposition: "skip", days: [], wires: [["sent"], ["skipped"], []] }),
  reply("sent", "sent"),
  reply("skipped", "skipped"),
  at({ id: "released", type: "debug", name: "released", active: true, tosidebar: true, complete: "admission", targetType: "msg", wires: [] }),
  ...route("suppress", "/suppress", ["sup", "ok"]),
  reply("ok", "ok"),
  ...route("paced", "/paced", ["tp"]),
  at({ id: "tp", type: "throughput-gate", config: "cfg", disposition: "skip", rate: 1, burst: 1, keyType: "channel", wires: [["sent"], ["skipped"], []] }),
  ...route("record", "/record", ["recorder"]),
  at({ id: "recorder", type: "frequency-cap-gate", config: "cfg", mode: "record", wires: [["recorded"], [], []] }),
  reply("recorded", "recorded"),
  ...route("release", "/release", ["releaser"]),
  at({ id: "releaser", type: "frequency-cap-gate", config: "cfg", mode: "release", wires: [["given-back"], [], []] }),
  reply("given-back", "released"),
  at({ id: "catch", type: "catch", scope: null, wires: [["bad"]] }),
  at({ id: "bad", type: "function", outputs: 1, wires: [["respond"]], func: "msg.payload = { outcome: 'error', error: msg.error.message };\nmsg.statusCode = 400;\nreturn msg;" }),
  at({ id: "respond", type: "http response", wires: [] }),
];

interface Answer { status: number; outcome: string; reason?: string; admission?: Record<string, unknown>; error?: string }

describe(`every node type in a real Node-RED ${nodeRedVersion()} on Node ${process.version} [real Node-RED]`, function () {
  this.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), "sendgate-chain-"));
  const flowFile = join(dir, "flows.json");
  writeFileSync(flowFile, JSON.stringify(FLOW));
  const red = new NodeRedProcess(flowFile, { debugMaxLength: 100_000 });
  let comms: EditorComms;

  before(async () => {
    await red.start();
    comms = await EditorComms.connect(red.baseUrl);
  });
  after(async () => {
    comms?.close();
    await red.stop();
    red.cleanUp();
    rmSync(dir, { recursive: true, force: true });
  });

  async function post(url: string, send: Record<string, unknown>, body: unknown = "hello"): Promise<Answer> {
    const res = await fetch(`${red.baseUrl}${url}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ send, body }) });
    const answer = (await res.json()) as Omit<Answer, "status" | "reason">;
    return { status: res.status, ...answer, reason: answer.admission?.reason as string | undefined };
  }

  it("admits, refuses and holds sends through suppression, caps and quiet hours, with record and release beside them", async () => {
    assert.equal((await post("/suppress", { topic: "suppress", recipient: "blocked", channel: "sms" })).outcome, "ok");
    const blocked = await post("/send", { recipient: "blocked", channel: "sms" });
    assert.deepEqual([blocked.outcome, blocked.reason], ["skipped", "opted_out"], JSON.stringify(blocked));

    const first = await post("/send", { recipient: "r1", channel: "sms", messageId: "m1" }, "hello");
    assert.equal(first.outcome, "sent");
    assert.deepEqual(await post("/send", { recipient: "r1", channel: "sms", messageId: "m2" }, "hello").then((a) => a.reason), "duplicate_content");
    const second = await post("/send", { recipient: "r1", channel: "sms", messageId: "m3" }, "second");
    assert.equal(second.outcome, "sent");
    assert.deepEqual(await post("/send", { recipient: "r1", channel: "sms", messageId: "m4" }, "third").then((a) => [a.outcome, a.reason]), ["skipped", "frequency_capped"]);

    // the provider failed on m3: release gives its slot and duplicate mark back
    const released = await post("/release", { recipient: "r1", channel: "sms", messageId: "m3", admission: second.admission });
    assert.equal(released.outcome, "released");
    assert.equal((released.admission?.trail as { refunded?: number }[]).at(-1)?.refunded, 2);
    assert.equal((await post("/send", { recipient: "r1", channel: "sms", messageId: "m5" }, "second")).outcome, "sent");

    // a send made elsewhere, recorded twice, counts once
    assert.equal((await post("/record", { recipient: "r2", channel: "sms", messageId: "ext-1" })).outcome, "recorded");
    assert.equal((await post("/record", { recipient: "r2", channel: "sms", messageId: "ext-1" })).outcome, "recorded");
    assert.equal((await post("/send", { recipient: "r2", channel: "sms", messageId: "x1" }, "a")).outcome, "sent");
    assert.equal((await post("/send", { recipient: "r2", channel: "sms", messageId: "x2" }, "b")).reason, "frequency_capped");

    assert.deepEqual(await post("/send", { recipient: "r3", channel: "sms", quietHours: { start: "00:00", end: "00:00", days: [0, 1, 2, 3, 4, 5, 6] } }).then((a) => [a.outcome, a.reason]), ["skipped", "quiet_hours"]);
    const bad = await post("/send", { channel: "sms" });
    assert.equal(bad.status, 400);
    assert.match(String(bad.error), /recipient/);
  });

  it("passes one send a second through the throughput-gate and skips the next with the wait until it would pass", async () => {
    assert.equal((await post("/paced", { recipient: "t1", channel: "sms" })).outcome, "sent");
    const over = await post("/paced", { recipient: "t2", channel: "sms" });
    assert.deepEqual([over.outcome, over.reason], ["skipped", "throughput_exceeded"]);
    const retry = over.admission?.retry_after_seconds as number;
    assert.ok(retry > 0 && retry <= 1, `retry ${retry}`);
    assert.equal(over.admission?.throughput_key, "default/sms");
  });

  it("holds a capped push and releases it by deferred when the slot re-opens", async () => {
    assert.equal((await post("/send", { recipient: "r4", channel: "push", messageId: "p1" }, "one")).outcome, "sent");
    // the second is held: its HTTP request is never answered (a held msg keeps no req/res), so stop waiting for it
    await fetch(`${red.baseUrl}/send`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ send: { recipient: "r4", channel: "push", messageId: "p2" }, body: "two" }), signal: AbortSignal.timeout(500),
    }).catch(() => undefined);
    await comms.until(1, 5000);
    const [admission] = comms.of("released");
    assert.equal(admission?.status, "deferred");
    assert.equal(admission?.reason, "frequency_capped");
  });

  it("shows each gate's counts in a short status, with a green dot although bad msgs arrived", async () => {
    const expected: Record<string, string> = { sup: "✓ 9 · ✗ 2 · caught 1 · list 1", cap: "✓ 6 · ✗ 2", quiet: "✓ 5 · ✗ 1", recorder: "recorded 2", releaser: "released 1", tp: "✓ 1 · ✗ 1" };
    for (const [id, text] of Object.entries(expected)) {
      for (let i = 0; i < 30 && comms.lastStatus(id)?.text !== text; i++) await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(comms.lastStatus(id), { fill: "green", shape: "dot", text }, id);
    }
  });
});
