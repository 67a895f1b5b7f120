import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodeRedProcess } from "../support/nodeRedProcess";
import { dropPrefix, REDIS_URL, redisClient, sleep, uniquePrefix } from "../support/redis";
import { totalCounterKey } from "../../src/core/caps/keys";

const LEASE_SECONDS = 2;

/** POST /send {recipient, messageId} → the verdict; a total cap of `max` on ad "ad-1" beside a per-recipient cap of 1. */
function flow(keyPrefix: string, max: number): object[] {
  return [
    { id: "tab1", type: "tab", label: "totals" },
    {
      id: "cfg", type: "cap-config", name: "shared caps", store: "redis", redisUrl: REDIS_URL, keyPrefix,
      timeoutMs: 5000, failMode: "closed", leaseSeconds: LEASE_SECONDS,
      rules: [
        { id: "ad-total", scope: "global", counts: "total", per: ["ad_id"], max_count: max, window_seconds: 1, window_type: "lifetime" },
        { id: "one-each", scope: "global", max_count: 1, window_seconds: 3600 },
      ],
    },
    { id: "in", type: "http in", z: "tab1", x: 100, y: 100, url: "/send", method: "post", wires: [["gate"]] },
    {
      id: "gate", type: "frequency-cap-gate", z: "tab1", x: 300, y: 100, config: "cfg",
      recipient: "payload.recipient", recipientType: "msg", messageId: "payload.messageId", messageIdType: "msg", channel: "push", channelType: "str",
      attributes: "payload.attributes", attributesType: "msg",
      wires: [["verdict"], ["verdict"], []],
    },
    {
      id: "verdict", type: "function", z: "tab1", x: 500, y: 100, outputs: 1,
      func: "msg.payload = { status: msg.admission.status, reason: msg.admission.reason || null, cap: msg.admission.cap_id || null };\nreturn msg;",
      wires: [["reply"]],
    },
    { id: "reply", type: "http response", z: "tab1", x: 650, y: 100, wires: [] },
    { id: "catch", type: "catch", z: "tab1", x: 300, y: 160, scope: ["gate"], wires: [["failed"]] },
    { id: "failed", type: "function", z: "tab1", x: 500, y: 160, func: "msg.statusCode = 503;\nmsg.payload = { error: msg.error.message };\nreturn msg;", wires: [["reply"]] },
  ];
}

interface Verdicts { allowed: number; skipped: number; other: string[] }

/** Sends to `recipients` through the processes in turn, `inFlight` requests at once. */
async function send(processes: NodeRedProcess[], recipients: string[], inFlight: number): Promise<Verdicts> {
  const out: Verdicts = { allowed: 0, skipped: 0, other: [] };
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < recipients.length) {
      const i = next++;
      const target = processes[i % processes.length];
      const res = await fetch(`${target.baseUrl}/send`, {
        method: "POST", headers: { "content-type": "application/json" },
        body: JSON.stringify({ recipient: recipients[i], messageId: `${recipients[i]}-${i}-${Math.random()}`, attributes: { ad_id: "ad-1" } }),
      });
      const body = await res.json() as { status?: string; reason?: string | null };
      if (body.status === "allowed" && !body.reason) out.allowed++;
      else if (body.status === "skipped") out.skipped++;
      else out.other.push(JSON.stringify(body));
    }
  }));
  return out;
}

const names = (prefix: string, n: number, from = 0): string[] => Array.from({ length: n }, (_, i) => `${prefix}${from + i}`);

describe("a total cap shared by two real Node-RED processes on one Redis", function () {
  this.timeout(120_000);
  const dir = mkdtempSync(join(tmpdir(), "sendgate-totals-"));
  const redis = redisClient();
  let processes: NodeRedProcess[] = [];
  let keyPrefix = "";

  async function startTwo(max: number): Promise<void> {
    keyPrefix = uniquePrefix("totals");
    const flowFile = join(dir, `flows-${keyPrefix}.json`);
    writeFileSync(flowFile, JSON.stringify(flow(keyPrefix, max)));
    processes = [new NodeRedProcess(flowFile), new NodeRedProcess(flowFile)];
    await Promise.all(processes.map((p) => p.start()));
  }

  afterEach(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    processes.forEach((p) => p.cleanUp());
    await dropPrefix(redis, keyPrefix);
  });

  after(async () => {
    await redis.quit();
    rmSync(dir, { recursive: true, force: true });
  });

  it("5,000 sends to 5,000 recipients over both, 40 at once: exactly 1,000 admitted in all", async () => {
    await startTwo(1000);
    const result = await send(processes, names("u", 5000), 40);
    console.log(`      two Node-RED processes: 5,000 sends, allowed ${result.allowed}, skipped ${result.skipped}, no verdict ${result.other.length}`);
    assert.deepEqual(result.other, []);
    assert.equal(result.allowed, 1000);
    assert.equal(result.skipped, 4000);
  });

  it("one killed while it holds a lease: the total never passes max, and after the lease timeout the stranded block is spent by the other", async () => {
    await startTwo(100);
    const [a, b] = processes as [NodeRedProcess, NodeRedProcess];
    // a spends 10, then 10 repeats (refused by the per-recipient cap) leave their 10 reserved slots in a's lease
    assert.equal((await send([a], names("a", 10), 1)).allowed, 10);
    const repeats = await send([a], names("a", 10), 10);
    assert.deepEqual([repeats.allowed, repeats.skipped], [0, 10]);
    const key = totalCounterKey(keyPrefix, "default", "ad-total", ["ad-1"]);
    const fields = await redis.hgetall(key);
    const leases = Object.entries(fields).filter(([field]) => field.startsWith("l")).map(([, value]) => Number(value.split(",")[0]));
    assert.equal(leases.length, 1, `a holds one lease: ${JSON.stringify(fields)}`);
    const stranded = leases[0];
    assert.ok(stranded > 0, "a holds unspent slots");
    await a.kill();

    const before = await send([b], names("b", 200), 20);
    assert.deepEqual(before.other, []);
    assert.equal(before.allowed, 100 - 10 - stranded, "while a's lease lives, its block is nobody's");

    await sleep(LEASE_SECONDS * 1000 + 500);
    const after = await send([b], names("c", 50), 10);
    assert.equal(after.allowed, stranded, "the lapsed block is spendable again");
    assert.equal(10 + before.allowed + after.allowed, 100, "and the total never passed max");
    const counted = await redis.hgetall(key);
    assert.equal(Object.entries(counted).filter(([f]) => f.startsWith("b")).reduce((sum, [, v]) => sum + Number(v), 0), 100);
  });

  it("a lifetime total of 10,000,000 keeps its counter under 10 KB of Redis", async () => {
    await startTwo(10_000_000);
    const first = await send(processes, names("m", 200), 20);
    assert.deepEqual([first.allowed, first.other.length], [200, 0]);
    // each process gives its unspent block back after a second without sends
    const leasesOut = async (): Promise<string[]> => Object.keys(await redis.hgetall(totalCounterKey(keyPrefix, "default", "ad-total", ["ad-1"]))).filter((f) => f.startsWith("l"));
    for (let i = 0; i < 50 && (await leasesOut()).length > 0; i++) await sleep(100);
    assert.deepEqual(await leasesOut(), []);
    const key = totalCounterKey(keyPrefix, "default", "ad-total", ["ad-1"]);
    // the rest of the ten million as record mode would count them: the counter is one number per bucket
    await redis.hincrby(key, "b0", 10_000_000 - 200);
    const bytes = Number(await redis.call("MEMORY", "USAGE", key, "SAMPLES", "0"));
    const ttl = await redis.pttl(key);
    console.log(`      lifetime total at 10,000,000: ${bytes} bytes of Redis, ttl ${ttl}`);
    assert.ok(bytes < 10_240, `${bytes} bytes`);
    assert.equal(ttl, -1, "a lifetime total never expires");
    const full = await send(processes, names("n", 5), 5);
    assert.deepEqual([full.allowed, full.skipped], [0, 5], "the ten millionth send was the last");
  });
});
