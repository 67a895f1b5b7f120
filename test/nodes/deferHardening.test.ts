import assert from "node:assert/strict";
import Redis from "ioredis";
import { deployGateFlow, sendInOrder, type GateFlow } from "../support/gateFlow";
import { flowNode, gateNodes, helper, TAB, Collector, type Msg } from "../support/nodeRed";
import { OwnRedis } from "../support/redisServer";
import { SlowLink } from "../support/slowLink";
import { REDIS_URL, dropPrefix, redisClient, sleep, uniquePrefix } from "../support/redis";
import { useUserDir } from "../support/userDir";

type Admission = { status: string; reason?: string; release_id?: string; deferrals?: number };
const admissionOf = (m: Msg | undefined) => m?.admission as Admission;

/** Every string a key, a field, a member or a value under the prefix holds (strings, hashes, sets, zsets, lists). */
async function everythingStored(redis: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      out.push(key);
      const type = await redis.type(key);
      if (type === "string") out.push(String(await redis.get(key)));
      else if (type === "hash") out.push(...Object.entries(await redis.hgetall(key)).flat());
      else if (type === "set") out.push(...await redis.smembers(key));
      else if (type === "zset") out.push(...await redis.zrange(key, 0, -1));
      else if (type === "list") out.push(...await redis.lrange(key, 0, -1));
    }
  } while (cursor !== "0");
  return out;
}

async function burst(flow: GateFlow, msgs: Record<string, unknown>[], index = 0): Promise<void> {
  for (const msg of msgs) flow.send(msg, index);
}

describe("deferral hardening (redis store)", function () {
  this.timeout(60_000);
  const redis = redisClient();
  let keyPrefix: string;
  before(() => helper.startServer());
  after(async () => {
    await helper.stopServer();
    await redis.quit();
  });
  beforeEach(() => { keyPrefix = uniquePrefix("dh"); });
  afterEach(async () => {
    await helper.unload();
    await dropPrefix(redis, keyPrefix);
  });

  const rule = (disposition: string, window = 2) => ({ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: window, disposition });

  it("two cap-configs on one Redis and one key prefix each release their own held msgs on time (single msgs and a burst of 2,000)", async () => {
    const flow = await deployGateFlow({ store: "redis", instances: 2, config: { keyPrefix, timeoutMs: 5000 }, gate: { deferMax: 600 }, rules: [rule("defer")] });
    // one held msg per cap-config, then a burst of 1,000 held per cap-config, all in one tick
    for (const i of [0, 1]) await sendInOrder({ ...flow, send: (m) => flow.send(m, i) }, [{ recipient: `solo-${i}`, channel: "sms", messageId: `solo-${i}-a` }]);
    for (const i of [0, 1]) flow.send({ recipient: `solo-${i}`, channel: "sms", messageId: `solo-${i}-b` }, i);
    for (const i of [0, 1]) {
      const first = Array.from({ length: 1000 }, (_, r) => ({ recipient: `c${i}-${r}`, channel: "sms", messageId: `c${i}-${r}-a` }));
      const second = first.map((m) => ({ ...m, messageId: (m.messageId).replace(/-a$/, "-b") }));
      await burst(flow, [...first, ...second], i);
    }
    const heldAt = Date.now();
    // due ~2 s after the first sends; every held msg must be out within 6 s, none put aside for 30 s
    while (flow.out.of("deferred").length < 2002 && Date.now() - heldAt < 8000) await sleep(50);
    const released = flow.out.of("deferred");
    assert.equal(released.length, 2002, `released ${released.length} of 2,002 within ${Date.now() - heldAt} ms`);
    assert.equal(new Set(released.map((m) => m.messageId)).size, 2002, "none twice");
    assert.ok(released.every((m) => String(m.messageId).endsWith("-b")));
  });

  it("a retried hold of the same msg holds it once and releases it once (single msgs and a burst)", async () => {
    const flow = await deployGateFlow({ store: "redis", config: { keyPrefix, timeoutMs: 5000 }, gate: { deferMax: 600 }, rules: [rule("defer")] });
    await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "first" }]);
    flow.send({ recipient: "r", channel: "sms", messageId: "held", payload: "try 1" });
    flow.send({ recipient: "r", channel: "sms", messageId: "held", payload: "try 2" });
    const burstMsgs = Array.from({ length: 1000 }, (_, r) => ({ recipient: `b${r}`, channel: "sms", messageId: `b${r}-a` }));
    await burst(flow, burstMsgs);
    const retried = burstMsgs.flatMap((m) => [1, 2].map((n) => ({ ...m, messageId: (m.messageId).replace(/-a$/, "-b"), payload: `try ${n}` })));
    await burst(flow, retried);
    await flow.out.until(1 + 1000 + 1001, 15_000);
    await sleep(500);
    const released = flow.out.of("deferred");
    assert.equal(released.length, 1001, `released ${released.length}`);
    assert.equal(new Set(released.map((m) => m.messageId)).size, 1001, "none twice");
    assert.equal(released.find((m) => m.messageId === "held")?.payload, "try 2", "the retry replaced the held copy");
  });

  it("a hold whose answer comes after its timeout (a stalled link) is waited for: the msg is held once and released once, not sent to Catch as well", async () => {
    const link = await SlowLink.open();
    try {
      const flow = await deployGateFlow({ store: "redis", config: { keyPrefix, timeoutMs: 5000, redisUrl: link.url }, gate: { deferMax: 600 }, rules: [rule("defer")] });
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "first" }]);
      // Redis applies the hold at once; its answer arrives after the hold's 2 s timeout
      link.stallRepliesFrom("late-hold-marker", 2500);
      flow.send({ recipient: "r", channel: "sms", messageId: "held", payload: "late-hold-marker" });
      await flow.out.until(2, 8000);
      await sleep(1000);
      assert.deepEqual(flow.out.of("caught").map((m) => m.messageId), []);
      assert.deepEqual(flow.out.of("deferred").map((m) => m.messageId), ["held"]);
    } finally {
      await helper.unload();
      await link.close();
    }
  });

  it("a burst's holds whose answers come after their timeout are waited for: 500 deferred in one tick, each held once and released once, none to Catch", async () => {
    const link = await SlowLink.open();
    try {
      const flow = await deployGateFlow({ store: "redis", config: { keyPrefix, timeoutMs: 5000, redisUrl: link.url }, gate: { deferMax: 600 }, rules: [rule("defer")] });
      const firsts = Array.from({ length: 500 }, (_, r) => ({ recipient: `s${r}`, channel: "sms", messageId: `s${r}-a` }));
      await burst(flow, firsts);
      await flow.out.until(500, 10_000);
      // the burst's holds go out in batches; from the first, Redis's answers reach the gate after the holds' 2 s timeout
      link.stallRepliesFrom("late-hold-marker", 2500);
      await burst(flow, firsts.map((m) => ({ ...m, messageId: m.messageId.replace(/-a$/, "-b"), payload: "late-hold-marker" })));
      await flow.out.until(1000, 15_000);
      await sleep(1000);
      assert.deepEqual(flow.out.of("caught").map((m) => m.messageId), []);
      const released = flow.out.of("deferred").map((m) => String(m.messageId));
      assert.equal(released.length, 500);
      assert.equal(new Set(released).size, 500, "none twice");
    } finally {
      await helper.unload();
      await link.close();
    }
  });

  it("with hashRecipients, no key and no stored value holds the recipient (held, collapsed, released)", async () => {
    const address = "alice.hidden@example.com";
    const flow = await deployGateFlow({
      store: "redis", config: { keyPrefix, timeoutMs: 5000, hashRecipients: true }, credentials: { hmacSecret: "s3cret" },
      gate: { deferMax: 600 }, rules: [rule("collapse", 3)],
    });
    await sendInOrder(flow, [{ recipient: address, channel: "sms", messageId: "m0", topic: "news" }]);
    for (let i = 1; i <= 3; i++) flow.send({ recipient: address, channel: "sms", messageId: `m${i}`, topic: "news", payload: `to ${address}` });
    const others = Array.from({ length: 1000 }, (_, r) => ({ recipient: `${r}.${address}`, channel: "sms", messageId: `o${r}`, topic: "news" }));
    await burst(flow, [...others, ...others.map((m) => ({ ...m, messageId: `${m.messageId}-b` }))]);
    await sleep(500);
    const stored = await everythingStored(redis, keyPrefix);
    assert.ok(stored.length > 0);
    const leaks = stored.filter((s) => s.includes("alice.hidden") || s.includes("alice%2ehidden") || s.includes(encodeURIComponent(address)));
    assert.deepEqual(leaks.slice(0, 3), [], `${leaks.length} keys or values hold the address`);
    await flow.out.until(1 + 1000 + 1 + 1000, 15_000);
    const news = flow.out.of("deferred").find((m) => m.messageId === "m1");
    assert.deepEqual((news?.collapsed as Msg[]).map((m) => [m.messageId, m.recipient]), [["m1", address], ["m2", address], ["m3", address]]);
  });

  it("a held msg of a gate deployed nowhere, past its expiresAt, does not spin the poller; its gate leaves it by skipped when it comes back", async function () {
    const own = new OwnRedis();
    await own.start();
    const ownClient = new Redis(own.url);
    try {
      const flowOf = (gates: string[]): object[] => [
        TAB,
        { id: "cfg", type: "cap-config", store: "redis", redisUrl: own.url, keyPrefix, timeoutMs: 5000, rules: [rule("defer", 2)] },
        ...gates.map((id) => flowNode({ id, type: "frequency-cap-gate", config: "cfg", deferMax: 600, wires: [["allowed"], ["skipped"], ["deferred"]] })),
        flowNode({ id: "allowed", type: "helper" }), flowNode({ id: "skipped", type: "helper" }), flowNode({ id: "deferred", type: "helper" }),
      ];
      await helper.load(gateNodes, flowOf(["g1", "g2"]));
      let out = new Collector(["allowed", "skipped", "deferred"]);
      const g1 = helper.getNode("g1") as NonNullable<ReturnType<typeof helper.getNode>>;
      g1.receive({ recipient: "r", channel: "sms", messageId: "a" });
      await out.until(1);
      // due in ~2 s, expires at 2.5 s: held, then orphaned before it is due
      g1.receive({ recipient: "r", channel: "sms", messageId: "b", expiresAt: Date.now() + 2500 });
      await sleep(200);
      assert.equal(out.total(), 1, "b is held");
      await helper.unload();
      await helper.load(gateNodes, flowOf(["g2"]));
      await sleep(3000); // g1's msg is past its expiresAt now
      const evalsha = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await ownClient.info("commandstats"))?.[1] ?? 0);
      const before = await evalsha();
      await sleep(2000);
      const calls = (await evalsha()) - before;
      assert.ok(calls < 60, `${calls} script calls in 2 s with nothing to release`);
      console.log(`      ${calls} script calls in 2 s while a msg of a gate deployed nowhere waits`);
      await helper.unload();
      await helper.load(gateNodes, flowOf(["g1", "g2"]));
      out = new Collector(["allowed", "skipped", "deferred"]);
      await out.until(1, 5000);
      const [expired] = out.of("skipped");
      assert.equal(expired?.messageId, "b");
      assert.equal(admissionOf(expired).reason, "defer_expired");
    } finally {
      ownClient.disconnect();
      await helper.unload();
      await own.stop();
      own.cleanUp();
    }
  });
});

describe("deferral hardening: release_id", function () {
  this.timeout(30_000);
  useUserDir("release-id");
  const redis = redisClient();
  let keyPrefix: string;
  before(() => helper.startServer());
  after(async () => {
    await helper.stopServer();
    await redis.quit();
  });
  beforeEach(() => { keyPrefix = uniquePrefix("rid"); });
  afterEach(async () => {
    await helper.unload();
    await dropPrefix(redis, keyPrefix);
  });

  for (const store of ["memory", "redis"] as const) {
    it(`gives every released msg a release_id, different for each held msg and each deferral (${store} store)`, async () => {
      const flow = await deployGateFlow({
        store, config: { keyPrefix, timeoutMs: 5000, redisUrl: REDIS_URL }, gate: { deferMax: 600 },
        rules: [{ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: 1, disposition: "defer" }],
      });
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "a" }]);
      flow.send({ recipient: "r", channel: "sms", messageId: "b" });
      flow.send({ recipient: "r", channel: "sms", messageId: "c" });
      await flow.out.until(3, 5000);
      const [b, c] = ["b", "c"].map((id) => flow.out.of("deferred").find((m) => m.messageId === id) as Msg);
      const idB = admissionOf(b).release_id;
      assert.match(idB ?? "", /^[0-9a-f]{32}$/);
      assert.notEqual(admissionOf(c).release_id, idB);
      // b goes round the chain, is deferred a second time and released again: a new release, a new id
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "d" }, b]);
      await flow.out.until(5, 5000);
      const again = flow.out.of("deferred").at(-1);
      assert.equal(again?.messageId, "b");
      assert.equal(admissionOf(again).deferrals, 2);
      assert.match(admissionOf(again).release_id ?? "", /^[0-9a-f]{32}$/);
      assert.notEqual(admissionOf(again).release_id, idB);
    });
  }
});
