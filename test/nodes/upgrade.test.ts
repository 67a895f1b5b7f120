import assert from "node:assert/strict";
import { deployGateFlow, sendInOrder } from "../support/gateFlow";
import { dropPrefix, sleep, uniquePrefix } from "../support/redis";
import { helperSuiteWithRedis } from "../support/helperSuite";

describe("upgrading from 0.1: counters keep counting", function () {
  this.timeout(30_000);
  const redis = helperSuiteWithRedis();

  it("moves 0.1 counters (a sorted set per recipient and cap) into the recipient's hash at start, and enforces them", async () => {
    const keyPrefix = uniquePrefix("upgrade");
    const now = Date.now();
    // as 0.1 wrote them: member = messageId, score = time; expiry window + 60 s
    await redis.zadd(`${keyPrefix}:{default|alice}:c:daily`, now - 3000, "old-1", now - 2000, "old-2", now - 1000, "old-3");
    await redis.pexpire(`${keyPrefix}:{default|alice}:c:daily`, 86_460_000);
    await redis.zadd(`${keyPrefix}:{default|bob}:c:per-campaign:c1`, now - 500, "old-b");
    const flow = await deployGateFlow({
      store: "redis", config: { keyPrefix, timeoutMs: 2000 },
      rules: [
        { id: "daily", scope: "global", max_count: 3, window_seconds: 86400 },
        { id: "per-campaign", scope: "global", max_count: 1, window_seconds: 86400, per: ["campaign_id"] },
      ],
    });
    for (let i = 0; i < 100 && (await redis.get(`${keyPrefix}:layout`)) !== "2"; i++) await sleep(50);
    assert.equal(await redis.get(`${keyPrefix}:layout`), "2", "the move finished");
    assert.deepEqual((await redis.keys(`${keyPrefix}:*:c:*`)).length, 0, "no old key left");
    await sendInOrder(flow, [
      { recipient: "alice", channel: "sms", messageId: "new-1" },
      { recipient: "alice", channel: "sms", messageId: "old-2" },
      { recipient: "bob", channel: "sms", messageId: "new-2", attributes: { campaign_id: "c1" } },
      { recipient: "bob", channel: "sms", messageId: "new-3", attributes: { campaign_id: "c2" } },
    ]);
    assert.deepEqual(flow.out.of("skipped").map((m) => m.messageId), ["new-1", "new-2"], "the three old sends fill alice's day; bob's c1 is used");
    assert.deepEqual(flow.out.of("allowed").map((m) => m.messageId), ["old-2", "new-3"], "a retry of an old send is still a retry");
    const retry = (flow.out.of("skipped")[0]?.admission as { retry_after_seconds: number }).retry_after_seconds;
    assert.ok(retry > 86_390 && retry <= 86_400, `retry ${retry}: the oldest old entry ages out first`);
    const ttl = await redis.pttl(`${keyPrefix}:{default|alice}:c`);
    assert.ok(ttl > 86_000_000, `the hash lives as long as the old set would have (${ttl})`);
    await dropPrefix(redis, keyPrefix);
  });
});
