import { MemoryStore } from "../../src/core/store/memoryStore";
import { RedisStore } from "../../src/redis/redisStore";
import { dropPrefix, REDIS_URL, redisClient } from "../support/redis";
import { OwnRedisCluster } from "../support/redisServer";
import { counterStoreConformance } from "./counterStoreConformance";
import { quotaConformance } from "./quotaConformance";

counterStoreConformance("memory", async () => new MemoryStore(), (s) => s.close());
// the shared Redis keeps what a test leaves (a block list has no expiry): each test's keys go with it
counterStoreConformance("redis", async () => new RedisStore({ url: REDIS_URL }), async (s, prefix) => {
  const admin = redisClient();
  try {
    await dropPrefix(admin, prefix);
  } finally {
    await admin.quit();
    await s.close();
  }
});
quotaConformance("memory", async () => new MemoryStore(), (s) => s.close());
quotaConformance("redis", async () => new RedisStore({ url: REDIS_URL }), (s) => s.close());

describe("on a Redis Cluster of three masters", function () {
  this.timeout(60_000);
  const cluster = new OwnRedisCluster();
  before(() => cluster.start());
  after(() => cluster.stop());
  counterStoreConformance("redis-cluster", async () => new RedisStore({ clusterNodes: cluster.seeds.split(",") }), (s) => s.close());
  quotaConformance("redis-cluster", async () => new RedisStore({ clusterNodes: cluster.seeds.split(",") }), (s) => s.close());
});
