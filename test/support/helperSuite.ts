import type Redis from "ioredis";
import { helper } from "./nodeRed";
import { redisClient } from "./redis";

/**
 * The lifecycle most node suites share: the test helper's server for the
 * suite, flows unloaded after each test, and a Redis client to look at (and
 * clean up) what the gates wrote. Call it inside a `describe`.
 */
export function helperSuiteWithRedis(): Redis {
  const redis = redisClient();
  before(() => helper.startServer());
  after(async () => {
    await helper.stopServer();
    await redis.quit();
  });
  afterEach(() => helper.unload());
  return redis;
}
