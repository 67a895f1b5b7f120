import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { campaignProblems, type CampaignResult } from "../../bench/burst/campaign";
import { REDIS_URL, dropPrefix, redisClient, uniquePrefix } from "../support/redis";
import { OwnRedisCluster } from "../support/redisServer";

const run = promisify(execFile);
const MSGS = 1_000_000;

/** One campaign in a child Node-RED: its result, or the child's error output. */
async function campaign(store: Record<string, unknown>, keyPrefix: string): Promise<CampaignResult> {
  const child = join(__dirname, "..", "support", "campaignChild.js");
  const { stdout } = await run(process.execPath, [child, JSON.stringify({ store, keyPrefix, msgs: MSGS })], { maxBuffer: 1 << 20, timeout: 170_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1) as string) as CampaignResult;
}

/**
 * A campaign of a million msgs handed to a frequency-cap-gate in one tick
 * (500,000 recipients, each twice, a cap of 1), every cap-config setting at
 * its default: each recipient's first msg allowed, its second skipped, none
 * failing open or let through as overloaded, on every store.
 */
describe("a campaign of 1,000,000 msgs in one tick, every setting at its default, is capped exactly", function () {
  this.timeout(180_000);

  it("on the memory store", async () => {
    const result = await campaign({ store: "memory" }, uniquePrefix("campaign-m"));
    assert.deepEqual(campaignProblems(result), []);
    console.log(`      memory: ${Math.round(result.msgsPerSec)} msgs/s, ${Math.round(result.waitingBytesPerMsg)} B per waiting msg, peak heap ${Math.round(result.peakHeapMb)} MB`);
  });

  it("on Redis", async () => {
    const keyPrefix = uniquePrefix("campaign-r");
    const redis = redisClient();
    try {
      const result = await campaign({ store: "redis", redisUrl: REDIS_URL }, keyPrefix);
      assert.deepEqual(campaignProblems(result), []);
      console.log(`      redis: ${Math.round(result.msgsPerSec)} msgs/s, ${Math.round(result.waitingBytesPerMsg)} B per waiting msg, peak heap ${Math.round(result.peakHeapMb)} MB`);
    } finally {
      await dropPrefix(redis, keyPrefix);
      await redis.quit();
    }
  });

  it("on a 3-master Redis Cluster", async () => {
    const cluster = new OwnRedisCluster();
    await cluster.start();
    try {
      const result = await campaign({ store: "redis-cluster", redisNodes: cluster.seeds }, uniquePrefix("campaign-c"));
      assert.deepEqual(campaignProblems(result), []);
      console.log(`      cluster: ${Math.round(result.msgsPerSec)} msgs/s, ${Math.round(result.waitingBytesPerMsg)} B per waiting msg, peak heap ${Math.round(result.peakHeapMb)} MB`);
    } finally {
      await cluster.stop();
    }
  });
});
