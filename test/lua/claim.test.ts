import assert from "node:assert/strict";
import type Redis from "ioredis";
import { luaScript } from "../../src/core/stores/luaScripts";
import { dropPrefix, redisClient, uniquePrefix } from "../support/redis";

/** lua/claim.lua run straight in Redis with EVAL, no store code in between. */
describe("lua/claim.lua in Redis", () => {
  let redis: Redis;
  let prefix: string;
  const source = luaScript("claim");
  const key = (name: string) => `${prefix}:{o|r}:c:${name}`;
  const claim = (member: string, caps: [string, number, number, number?][]) =>
    redis.eval(source, caps.length, ...caps.map((c) => c[0]), member, ...caps.flatMap((c) => [c[1], c[2], c[3] ?? 0])) as Promise<number[]>;

  before(() => { redis = redisClient(); });
  after(async () => { await redis.quit(); });
  beforeEach(() => { prefix = uniquePrefix("lua"); });
  afterEach(async () => dropPrefix(redis, prefix));

  it("adds the member with the server's time as score and expires the set at window + 60 s", async () => {
    const [sec] = await redis.time();
    const reply = await claim("msg-1", [[key("a"), 10_000, 2]]);
    assert.equal(reply[0], 1);
    assert.deepEqual(reply.slice(2), [1, 0, -1]);
    const [member, score] = await redis.zrange(key("a"), 0, -1, "WITHSCORES");
    assert.equal(member, "msg-1");
    assert.ok(Math.abs(Number(score) - Number(sec) * 1000) < 2000, `score ${score}`);
    assert.ok(Math.abs(Number(reply[1]) - Number(score)) < 1);
    const ttl = await redis.pttl(key("a"));
    assert.ok(ttl > 69_000 && ttl <= 70_000, `ttl ${ttl}`);
  });

  it("refuses without writing to any key when one cap is full", async () => {
    await claim("m1", [[key("strict"), 60_000, 1]]);
    const reply = await claim("m2", [[key("strict"), 60_000, 1], [key("loose"), 60_000, 9]]);
    assert.equal(reply[0], 0);
    assert.equal(await redis.exists(key("loose")), 0, "the loose cap must not have been created");
    const strictRetry = Number(reply[4]);
    assert.ok(strictRetry > 59_000 && strictRetry <= 60_000);
    assert.equal(reply[7], -1, "the loose cap is not blocking");
  });

  it("prunes entries older than the window before counting", async () => {
    const old = Date.now() - 120_000;
    await redis.zadd(key("p"), old, "ancient", old + 1, "ancient-2");
    const reply = await claim("fresh", [[key("p"), 60_000, 1]]);
    assert.equal(reply[0], 1);
    assert.deepEqual(await redis.zrange(key("p"), 0, -1), ["fresh"]);
  });

  it("marks a max-0 cap as never freeing (-2)", async () => {
    const reply = await claim("m", [[key("zero"), 60_000, 0]]);
    assert.deepEqual(reply.slice(2), [0, 0, -2]);
  });

  it("frees a calendar cap at its reset instant and keeps the set until then + 60 s", async () => {
    const resetAt = Date.now() + 5_000;
    await claim("c1", [[key("cal"), 86_400_000, 1, resetAt]]);
    const ttl = await redis.pttl(key("cal"));
    assert.ok(ttl > 63_000 && ttl <= 65_100, `ttl ${ttl}`);
    const refused = await claim("c2", [[key("cal"), 86_400_000, 1, resetAt]]);
    assert.equal(refused[0], 0);
    const retry = Number(refused[4]);
    assert.ok(retry > 3_000 && retry <= 5_100, `retry ${retry}`);
  });

  it("is called by SHA after one load", async () => {
    const sha = (await redis.script("LOAD", source)) as string;
    const reply = (await redis.evalsha(sha, 1, key("sha"), "m", 1000, 1, 0)) as number[];
    assert.equal(reply[0], 1);
  });
});
