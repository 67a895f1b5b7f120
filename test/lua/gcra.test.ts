import assert from "node:assert/strict";
import type Redis from "ioredis";
import { luaScript } from "../../src/redis/scripts";
import { dropPrefix, redisClient, uniquePrefix } from "../support/redis";

/** lua/gcra.lua run straight in Redis with EVAL, no store code in between. */
describe("lua/gcra.lua in Redis", () => {
  let redis: Redis;
  let prefix: string;
  const source = luaScript("gcra");
  const run = (keys: string[], args: number[]) => redis.eval(source, keys.length, ...keys, ...args) as Promise<number[]>;

  before(() => { redis = redisClient(); });
  after(async () => { await redis.quit(); });
  beforeEach(() => { prefix = uniquePrefix("gcra"); });
  afterEach(async () => dropPrefix(redis, prefix));

  it("keeps the TAT as whole µs of Redis TIME, expiring once it has passed", async () => {
    const key = `${prefix}:{o|t|o}:tp`;
    const [sec, usec] = await redis.time();
    const reply = await run([key, key, key], [100_000, 100_000, 0, 100_000, 100_000, 0, 100_000, 100_000, 0]);
    const now = reply[0];
    assert.ok(Math.abs(now - (Number(sec) * 1e6 + Number(usec))) < 1_000_000);
    // burst 2: two pass now, the third would conform in 100 ms
    assert.deepEqual(reply.slice(1), [1, 0, 1, 0, 0, 100_000]);
    const tat = await redis.get(key);
    assert.equal(tat, String(now + 200_000), "an integer, not 1.7e+15");
    const ttl = await redis.pttl(key);
    assert.ok(ttl > 1000 && ttl <= 1200, `pttl ${ttl}`);
  });

  it("reserves the next free instant within the most wait, and refuses past it without moving the TAT", async () => {
    const key = `${prefix}:{o|t|c|sms}:tp`;
    const args = (n: number, maxWait: number) => Array.from({ length: n }, () => [50_000, 0, maxWait]).flat();
    const first = await run(Array(4).fill(key), args(4, 120_000));
    assert.deepEqual(first.slice(1), [1, 0, 1, 50_000, 1, 100_000, 0, 150_000]);
    const tat = await redis.get(key);
    const again = await run([key], args(1, 120_000));
    assert.equal(again[1], 0);
    assert.equal(await redis.get(key), tat, "a refusal leaves the ceiling as it was");
  });

  it("lua/gcra_refund.lua moves the TAT back by n × T, not before now, and leaves a missing ceiling missing", async () => {
    const key = `${prefix}:{o|t|o}:tp`;
    const reserved = await run([key, key, key], [100_000, 0, 1_000_000, 100_000, 0, 1_000_000, 100_000, 0, 1_000_000]);
    const now = reserved[0];
    assert.equal(await redis.get(key), String(now + 300_000));
    const refund = luaScript("gcra_refund");
    // per item: T, n, the latest given back instant, τ; the 3rd reservation (now + 200 ms) was the latest
    const notLatest = await redis.eval(refund, 1, key, 100_000, 1, now + 100_000, 0) as number[];
    assert.equal(notLatest[1], now + 300_000, "a reservation after the given-back one keeps the TAT where it is");
    const back = await redis.eval(refund, 2, key, `${prefix}:{o|t|k|gone}:tp`, 100_000, 1, now + 200_000, 0, 100_000, 1, 0, 0) as number[];
    assert.equal(back[1], now + 200_000);
    assert.equal(back[2], 0);
    assert.equal(await redis.exists(`${prefix}:{o|t|k|gone}:tp`), 0);
    const all = await redis.eval(refund, 1, key, 100_000, 50, now + 100_000, 0) as number[];
    assert.equal(all[1], all[0], "never into the past");
  });
});
