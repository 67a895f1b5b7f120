import assert from "node:assert/strict";
import Redis from "ioredis";
import type { CapConfigNode } from "../../src/nodes/gate/capConfigNode";
import type { RedisStore } from "../../src/redis/redisStore";
import { helper, reasonOf, warnings } from "../support/nodeRed";
import { deployGateFlow, sendInOrder } from "../support/gateFlow";
import { dropPrefix, sleep, uniquePrefix } from "../support/redis";
import { helperSuiteWithRedis } from "../support/helperSuite";
import { OwnRedis, OwnRedisCluster } from "../support/redisServer";

describe("frequency-cap-gate on Redis: races, failures, cluster", function () {
  this.timeout(60_000);
  const redis = helperSuiteWithRedis();

  it("admits exactly 7 of 200 concurrent sends through two cap-configs on one Redis", async () => {
    const keyPrefix = uniquePrefix("race");
    const flow = await deployGateFlow({
      store: "redis", instances: 2, config: { keyPrefix, timeoutMs: 5000, failMode: "closed" },
      rules: [{ id: "seven", scope: "global", max_count: 7, window_seconds: 3600 }],
    });
    for (let i = 0; i < 200; i++) flow.send({ recipient: "racer", channel: "sms", messageId: `m${i}` }, i % 2);
    await flow.out.until(200, 20_000);
    assert.equal(flow.out.of("caught").length, 0, "no store failure: every verdict came from Redis");
    assert.equal(flow.out.of("allowed").length, 7);
    assert.equal(flow.out.of("skipped").length, 193);
    const bothGates = new Set(flow.out.of("skipped").map((m) => Number(String(m.messageId).slice(1)) % 2));
    assert.deepEqual([...bothGates].sort(), [0, 1], "both instances were refused sends");
    // the startup's layout marker (<prefix>:layout) lands whenever the migration check ends: count only counters
    const keys = (await redis.keys(`${keyPrefix}:*`)).filter((k) => !k.endsWith(":layout"));
    assert.equal(keys.length, 1);
    assert.equal(((await redis.hgetBuffer(keys[0], "seven"))?.length ?? 0) / 11, 7, "seven 11-byte entries");
    await dropPrefix(redis, keyPrefix);
  });

  it("stores an HMAC of the recipient, never the address, when hashRecipients is on", async () => {
    const keyPrefix = uniquePrefix("hmac");
    const flow = await deployGateFlow({
      store: "redis", config: { keyPrefix, hashRecipients: true }, credentials: { hmacSecret: "pepper" },
      rules: [{ id: "one", scope: "global", max_count: 1, window_seconds: 60 }],
    });
    await sendInOrder(flow, [
      { recipient: "bob@example.com", channel: "email", messageId: "1" },
      { recipient: "bob@example.com", channel: "email", messageId: "2" },
    ]);
    assert.equal(flow.out.of("allowed").length, 1);
    assert.equal(flow.out.of("skipped").length, 1);
    // the startup's layout marker (<prefix>:layout) lands whenever the migration check ends: count only counters
    const keys = (await redis.keys(`${keyPrefix}:*`)).filter((k) => !k.endsWith(":layout"));
    assert.equal(keys.length, 1);
    assert.doesNotMatch(keys[0], /bob|example/);
    assert.match(keys[0], /\{default\|[0-9a-f]{64}\}/);
    await dropPrefix(redis, keyPrefix);
  });

  it("refuses hashRecipients without the HMAC secret", async () => {
    const flow = await deployGateFlow({
      store: "redis", config: { hashRecipients: true }, rules: [],
    });
    await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "1" }]);
    assert.match(String((flow.out.of("caught")[0]?.error as { message: string }).message), /hmacSecret/);
  });

  it("fails open on an unreachable Redis, warning with org and channel", async () => {
    const flow = await deployGateFlow({
      store: "redis", config: { redisUrl: "redis://127.0.0.1:1", timeoutMs: 50, defaultOrg: "acme" },
      rules: [{ id: "one", scope: "global", max_count: 1, window_seconds: 60 }],
    });
    await sendInOrder(flow, [1, 2, 3].map((i) => ({ recipient: "r", channel: "sms", messageId: `m${i}` })));
    const allowed = flow.out.of("allowed");
    assert.equal(allowed.length, 3, "fail open lets every send through");
    assert.deepEqual(allowed.map(reasonOf), ["fail_open", "fail_open", "fail_open"]);
    assert.ok(warnings().some((w) => w.includes('org "acme"') && w.includes('channel "sms"')), warnings().join("\n"));
  });

  it("fails closed to Catch with the msg intact", async () => {
    const flow = await deployGateFlow({
      store: "redis", config: { redisUrl: "redis://127.0.0.1:1", timeoutMs: 50, failMode: "closed" },
      rules: [{ id: "one", scope: "global", max_count: 1, window_seconds: 60 }],
    });
    await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "m1", payload: "body" }]);
    const [caught] = flow.out.of("caught");
    assert.equal(caught?.payload, "body");
    assert.equal(caught?.admission, undefined);
    assert.match(String((caught?.error as { message: string }).message), /redis store|store/);
    assert.equal(flow.out.of("allowed").length, 0);
  });

  it("fails open while its Redis is killed, shows it, and recovers when Redis returns", async () => {
    const own = new OwnRedis();
    await own.start();
    try {
      const flow = await deployGateFlow({
        store: "redis", config: { redisUrl: own.url, timeoutMs: 100, keyPrefix: uniquePrefix("kill") },
        rules: [{ id: "two", scope: "global", max_count: 2, window_seconds: 60 }],
      });
      const shown: string[] = [];
      const original = flow.gate.status.bind(flow.gate);
      flow.gate.status = (s) => { if (typeof s !== "string") shown.push(`${s.fill}:${s.text}`); original(s); };
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "before" }]);
      assert.equal(reasonOf(flow.out.of("allowed")[0]), undefined);

      await own.stop();
      await sleep(300);
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "during" }]);
      assert.equal(reasonOf(flow.out.of("allowed")[1]), "fail_open");
      await sleep(400);
      assert.ok(shown.some((s) => s.startsWith("yellow:") && s.includes("fail-open: redis down")), shown.join("\n"));

      await own.start();
      const store = (helper.getNode("cfg0") as CapConfigNode).service?.store as RedisStore;
      for (let i = 0; i < 100 && store.state() !== "ready"; i++) await sleep(50);
      assert.equal(store.state(), "ready");
      await sleep(1100); // the circuit breaker's cool-down
      await sendInOrder(flow, [2, 3].map((i) => ({ recipient: "r", channel: "sms", messageId: `after-${i}` })));
      // a fresh Redis holds nothing: two new claims fit the cap of two
      assert.deepEqual(flow.out.of("allowed").slice(2).map(reasonOf), [undefined, undefined]);
      assert.equal(flow.out.of("skipped").length, 0);
    } finally {
      await own.stop();
      own.cleanUp();
    }
  });

  it("closes its Redis connection on redeploy", async () => {
    await deployGateFlow({ store: "redis", rules: [] });
    const store = (helper.getNode("cfg0") as CapConfigNode).service?.store as RedisStore;
    for (let i = 0; i < 40 && store.state() !== "ready"; i++) await sleep(25);
    assert.equal(store.client.status, "ready");
    await helper.unload();
    assert.equal(store.client.status, "end");
  });

  describe("on a Redis Cluster of three masters", () => {
    const cluster = new OwnRedisCluster();
    before(async function () {
      this.timeout(30_000);
      await cluster.start();
    });
    after(() => cluster.stop());

    it("claims several caps of one recipient in one slot, for recipients on every master", async () => {
      const flow = await deployGateFlow({
        store: "redis", config: { store: "redis-cluster", redisNodes: cluster.seeds, timeoutMs: 2000, failMode: "closed" },
        rules: [
          { id: "sms-2", scope: "channel", channel: "sms", max_count: 2, window_seconds: 60 },
          { id: "all-3", scope: "global", max_count: 3, window_seconds: 60 },
          { id: "topic-1", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60, per: ["topic"] },
        ],
      });
      const recipients = Array.from({ length: 30 }, (_, i) => `user-${i}`);
      const msgs = recipients.flatMap((r) => [
        { recipient: r, channel: "sms", messageId: `${r}-1`, attributes: { topic: "a" } },
        { recipient: r, channel: "sms", messageId: `${r}-2`, attributes: { topic: "b" } },
        { recipient: r, channel: "sms", messageId: `${r}-3`, attributes: { topic: "c" } },
      ]);
      for (const m of msgs) flow.send(m);
      await flow.out.until(msgs.length, 20_000);
      assert.equal(flow.out.of("caught").length, 0, "no CROSSSLOT or other store error");
      assert.equal(flow.out.of("allowed").length, 60);
      assert.ok(flow.out.of("skipped").every((m) => (m.admission as { cap_id: string }).cap_id === "sms-2"));
      const masters = new Set<number>();
      for (const node of cluster.nodes) {
        const own = new Redis({ port: node.port, host: "127.0.0.1" });
        if ((await own.dbsize()) > 0) masters.add(node.port);
        await own.quit();
      }
      assert.equal(masters.size, 3, "recipients spread over all three masters");
    });
  });
});
