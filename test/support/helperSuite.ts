import type Redis from "ioredis";
import { helper } from "./nodeRed";
import { redisClient } from "./redis";

/** The lifecycle most node suites share: the test helper's server for the suite, flows unloaded after each test. Call it inside a `describe`. */
export function helperSuite(): void {
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());
}

/** helperSuite, and a Redis client to look at (and clean up) what the gates wrote. */
export function helperSuiteWithRedis(): Redis {
  const redis = redisClient();
  helperSuite();
  after(() => redis.quit());
  return redis;
}
