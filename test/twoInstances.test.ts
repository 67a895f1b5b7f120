import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodeRedProcess } from "./support/nodeRedProcess";
import { REDIS_URL, dropPrefix, redisClient, sleep, uniquePrefix } from "./support/redis";

const RECIPIENTS = 1000;

/** The same flow on two Node-RED processes sharing one Redis: the held msgs of one queue, released exactly once between them. */
function flow(keyPrefix: string, reportUrl: string): object[] {
  return [
    { id: "tab1", type: "tab", label: "two instances" },
    {
      id: "cfg", type: "cap-config", name: "shared caps", store: "redis", redisUrl: REDIS_URL, keyPrefix, timeoutMs: 5000, failMode: "closed",
      rules: [{ id: "d", scope: "channel", channel: "sms", max_count: 1, window_seconds: 2, disposition: "defer" }],
    },
    { id: "in", type: "http in", z: "tab1", x: 100, y: 100, url: "/fan", method: "post", wires: [["fan"]] },
    {
      id: "fan", type: "function", z: "tab1", x: 250, y: 100, outputs: 2,
      func: "const out = msg.payload.recipients.flatMap(r => [1, 2].map(n => ({ recipient: r, channel: 'sms', messageId: r + '-' + n })));\n"
        + "return [out, { ...msg, payload: { queued: out.length } }];",
      wires: [["gate"], ["reply"]],
    },
    { id: "reply", type: "http response", z: "tab1", x: 400, y: 160, wires: [] },
    { id: "gate", type: "frequency-cap-gate", z: "tab1", x: 400, y: 100, config: "cfg", deferMax: 600, wires: [[], [], ["label"]] },
    {
      id: "label", type: "function", z: "tab1", x: 550, y: 100, outputs: 1,
      func: "msg.payload = { id: msg.messageId, instance: global.get('instance'), status: msg.admission.status };\nmsg.headers = { 'content-type': 'application/json' };\nreturn msg;",
      wires: [["report"]],
    },
    { id: "report", type: "http request", z: "tab1", x: 700, y: 100, method: "POST", ret: "txt", url: reportUrl, wires: [[]] },
  ];
}

describe("two Node-RED instances on one Redis release held msgs exactly once", function () {
  this.timeout(90_000);
  const dir = mkdtempSync(join(tmpdir(), "sendgate-two-"));
  const keyPrefix = uniquePrefix("two");
  const redis = redisClient();
  const released: { id: string; instance: string; status: string }[] = [];
  let server: Server;
  let a: NodeRedProcess;
  let b: NodeRedProcess;

  before(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => { body += c.toString(); });
      req.on("end", () => {
        released.push(JSON.parse(body) as { id: string; instance: string; status: string });
        res.end("ok");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const flowFile = join(dir, "flows.json");
    writeFileSync(flowFile, JSON.stringify(flow(keyPrefix, `http://127.0.0.1:${port}/released`)));
    a = new NodeRedProcess(flowFile, { functionGlobalContext: { instance: "A" } });
    b = new NodeRedProcess(flowFile, { functionGlobalContext: { instance: "B" } });
    await Promise.all([a.start(), b.start()]);
  });

  after(async () => {
    await Promise.all([a.stop(), b.stop()]);
    a.cleanUp();
    b.cleanUp();
    server.close();
    rmSync(dir, { recursive: true, force: true });
    await dropPrefix(redis, keyPrefix);
    await redis.quit();
  });

  it(`releases ${RECIPIENTS} held msgs, none twice and none lost`, async () => {
    const recipients = Array.from({ length: RECIPIENTS }, (_, i) => `user-${i}`);
    const fanned = await fetch(`${a.baseUrl}/fan`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ recipients }),
    });
    assert.deepEqual(await fanned.json(), { queued: RECIPIENTS * 2 });
    const started = Date.now();
    while (released.length < RECIPIENTS && Date.now() - started < 60_000) await sleep(100);
    await sleep(3000); // anything released twice would arrive by now
    const ids = released.map((r) => r.id);
    assert.equal(new Set(ids).size, ids.length, "no msg released twice");
    assert.equal(ids.length, RECIPIENTS, "none lost");
    assert.ok(ids.every((id) => id.endsWith("-2")), "only the second send of each recipient was held");
    assert.ok(released.every((r) => r.status === "deferred"));
    const byInstance = { A: released.filter((r) => r.instance === "A").length, B: released.filter((r) => r.instance === "B").length };
    assert.ok(byInstance.A > 0 && byInstance.B > 0, `both instances released some: ${JSON.stringify(byInstance)}`);
    assert.equal(await redis.zcard(`${keyPrefix}:{${keyPrefix}:dq}:due`), 0);
  });
});
