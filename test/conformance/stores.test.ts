import { MemoryStore } from "../../src/core/stores/memoryStore";
import { RedisStore } from "../../src/core/stores/redisStore";
import { REDIS_URL } from "../support/redis";
import { counterStoreConformance } from "./counterStoreConformance";

counterStoreConformance("memory", async () => new MemoryStore(), (s) => s.close());
counterStoreConformance("redis", async () => new RedisStore({ url: REDIS_URL }), (s) => s.close());
