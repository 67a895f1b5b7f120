import { MemoryStore } from "../../src/core/stores/memoryStore";
import { RedisStore } from "../../src/core/stores/redisStore";
import { REDIS_URL } from "../support/redis";
import { OwnRedisCluster } from "../support/redisServer";
import { counterStoreConformance } from "./counterStoreConformance";
import { quotaConformance } from "./quotaConformance";

counterStoreConformance("memory", async () => new MemoryStore(), (s) => s.close());
counterStoreConformance("redis", async () => new RedisStore({ url: REDIS_URL }), (s) => s.close());
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
