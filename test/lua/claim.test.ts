import assert from "node:assert/strict";
import type Redis from "ioredis";
import { luaScript } from "../../src/redis/scripts";
import { dropPrefix, redisClient, uniquePrefix } from "../support/redis";

type Cap = [field: string, windowMs: number, max: number, start?: number, reset?: number, shadow?: 1];

const WRAP = 2 ** 40;

/** The packed entries of a counter field: ts (5 bytes, ms modulo 2^40), digest (4), token (2). */
function entries(value: Buffer | null): { ts: number; digest: number; token: number }[] {
  const out: { ts: number; digest: number; token: number }[] = [];
  for (let p = 0; value && p < value.length; p += 11) {
    out.push({ ts: value.readUIntBE(p, 5), digest: value.readUInt32BE(p + 5), token: value.readUInt16BE(p + 9) });
  }
  return out;
}

/** lua/caps/claim.lua, release.lua, record.lua, inspect.lua and suppression.lua run straight in Redis with EVAL, no store code in between. */
describe("lua/caps/claim.lua and its siblings in Redis", () => {
  let redis: Redis;
  let prefix: string;
  const claimSource = luaScript("claim");
  const key = (r = "r") => `${prefix}:{o|${r}}:c`;
  /** an entry's tail as the scripts take it: digest × 65536 + token */
  const tail = (digest: number, token: number) => digest * 65536 + token;
  /** one send's argument for record.lua: its tail, then per counter its field and limit index, comma-separated (lib/counter_entries.lua readItem) */
  const item = (t: number, counters: [field: string, limit: number][]) => [t, ...counters.flat()].join(",");
  /** claim.lua's sends' tails: 6 bytes each, in one argument */
  const tailBytes = (...tails: number[]) => {
    const bytes = Buffer.alloc(6 * tails.length);
    tails.forEach((t, i) => bytes.writeUIntBE(t, 6 * i, 6));
    return bytes;
  };
  /** a shape (lib/counter_entries.lua readShapes): per counter its field and limit index */
  const shape = (counters: [field: string, limit: number][]) => counters.map(([field, limit]) => `,${field},${limit}`).join("");
  /** the limits table (one limit per cap here), no histories, then the send's tail and its one shape */
  const claimArgs = (digest: number, token: number, caps: Cap[]) => [
    caps.length, ...caps.flatMap((c) => [c[1], c[2], c[3] ?? 0, c[4] ?? 0, c[5] ?? 0]), 0,
    tailBytes(tail(digest, token)), "", shape(caps.map((c, i) => [c[0], i + 1])),
  ];
  /** claim.lua, record.lua and inspect.lua answer one text of integers joined by commas */
  const numbers = (reply: unknown): number[] => {
    assert.equal(typeof reply, "string", "one text");
    assert.match(reply as string, /^-?\d+(,-?\d+)*$/, "integers joined by commas");
    return (reply as string).split(",").map(Number);
  };
  /**
   * claim.lua's answer in its long form: a send allowed with a new slot in every cap comes as FRESH
   * (2) and its counts; here as allowed (1) and per cap its count, held 0 and retry -1, like the others
   */
  const longForm = (reply: number[], capsPerSend: number[]): number[] => {
    const long = [reply[0]];
    let at = 1;
    for (const caps of capsPerSend) {
      const status = Number(reply[at++]);
      long.push(status === 2 ? 1 : status);
      for (let c = 0; c < caps; c++) long.push(...(status === 2 ? [reply[at++], 0, -1] : reply.slice((at += 3) - 3, at)));
    }
    assert.equal(at, reply.length, "every number read");
    return long;
  };
  const claim = async (digest: number, caps: Cap[], token = 1, recipient = "r") =>
    longForm(numbers(await redis.eval(claimSource, 1, key(recipient), ...claimArgs(digest, token, caps))), [caps.length]);

  before(() => { redis = redisClient(); });
  after(async () => { await redis.quit(); });
  beforeEach(() => { prefix = uniquePrefix("lua"); });
  afterEach(async () => dropPrefix(redis, prefix));

  it("packs one 11-byte entry per cap into the recipient's hash, with the server's time, and expires the hash after window + grace", async () => {
    const [sec] = await redis.time();
    const reply = await claim(0xdeadbeef, [["a", 10_000, 2], ["b", 30_000, 5]], 4242);
    assert.equal(reply[0] % 1, 0, "whole ms");
    assert.deepEqual(reply.slice(1), [1, 1, 0, -1, 1, 0, -1]);
    const [a, b] = await redis.hmgetBuffer(key(), "a", "b");
    for (const value of [a, b]) {
      const [entry] = entries(value);
      assert.equal(value?.length, 11);
      assert.equal(entry?.digest, 0xdeadbeef);
      assert.equal(entry?.token, 4242);
      assert.ok(Math.abs((entry?.ts ?? 0) - ((Number(sec) * 1000) % WRAP)) < 2000);
      assert.equal(entry?.ts, Number(reply[0]) % WRAP);
    }
    const ttl = await redis.pttl(key());
    // the longest window (30 s) + 2 minutes of grace
    assert.ok(ttl > 149_000 && ttl <= 150_000, `ttl ${ttl}`);
  });

  it("refuses without writing anything when one cap is full", async () => {
    await claim(1, [["strict", 60_000, 1]]);
    const before = await redis.hgetallBuffer(key());
    const reply = await claim(2, [["strict", 60_000, 1], ["loose", 60_000, 9]]);
    assert.equal(reply[1], 0);
    assert.deepEqual(await redis.hgetallBuffer(key()), before, "nothing written");
    const strictRetry = Number(reply[4]);
    assert.ok(strictRetry > 59_000 && strictRetry <= 60_000);
    assert.deepEqual(reply.slice(5), [0, 0, -1], "the loose cap is not blocking");
  });

  it("prunes entries older than the window before counting", async () => {
    const old = Buffer.alloc(11);
    old.writeUIntBE((Date.now() - 120_000) % WRAP, 0, 5);
    old.writeUInt32BE(77, 5);
    await redis.hset(key(), "p", old);
    const reply = await claim(5, [["p", 60_000, 1]]);
    assert.equal(reply[1], 1);
    assert.deepEqual(entries(await redis.hgetBuffer(key(), "p")).map((e) => e.digest), [5]);
  });

  it("marks a max-0 cap as never freeing (-2)", async () => {
    const reply = await claim(1, [["zero", 60_000, 0]]);
    assert.deepEqual(reply.slice(1), [0, 0, 0, -2]);
  });

  it("frees a calendar cap at its reset instant and counts only entries since its start", async () => {
    const now = Date.now();
    const cap: Cap = ["cal", 86_400_000, 1, now - 1_000, now + 5_000];
    await claim(1, [cap]);
    const refused = await claim(2, [cap]);
    assert.equal(refused[1], 0);
    const retry = Number(refused[4]);
    assert.ok(retry > 3_000 && retry <= 5_100, `retry ${retry}`);
    assert.equal((await claim(2, [["cal", 86_400_000, 1, now + 1_000, now + 86_401_000]]))[1], 1, "a period that began later does not count it");
  });

  it("admits a send only a shadow cap would refuse, without a slot in that cap, and reports it (-2 at max 0)", async () => {
    assert.deepEqual((await claim(1, [["enf", 60_000, 5], ["shd", 60_000, 1, 0, 0, 1]])).slice(1), [1, 1, 0, -1, 1, 0, -1]);
    const reply = await claim(2, [["enf", 60_000, 5], ["shd", 60_000, 1, 0, 0, 1], ["zero", 60_000, 0, 0, 0, 1]]);
    assert.equal(reply[1], 1, "admitted");
    assert.deepEqual(reply.slice(2, 5), [2, 0, -1], "the enforced cap took the slot");
    assert.equal(reply[5], 1, "the shadow cap's count stays");
    const wait = Number(reply[7]);
    assert.ok(wait > 59_000 && wait <= 60_000, `would-refuse wait ${wait}`);
    assert.deepEqual(reply.slice(8), [0, 0, -2], "a shadow max 0 would refuse for good");
    assert.deepEqual(entries(await redis.hgetBuffer(key(), "shd")).map((e) => e.digest), [1], "no entry for the send it would have refused");
    assert.equal(await redis.hexists(key(), "zero"), 0);
    assert.equal(entries(await redis.hgetBuffer(key(), "enf")).length, 2);
  });

  it("claims no shadow slot either when an enforced cap refuses", async () => {
    await claim(1, [["strict", 60_000, 1]]);
    const before = await redis.hgetallBuffer(key());
    const reply = await claim(2, [["strict", 60_000, 1], ["watch", 60_000, 9, 0, 0, 1]]);
    assert.equal(reply[1], 0);
    assert.deepEqual(reply.slice(5), [0, 0, -1]);
    assert.deepEqual(await redis.hgetallBuffer(key()), before, "nothing written");
  });

  it("admits a send whose every cap is a full shadow cap, writing nothing", async () => {
    await claim(1, [["only", 60_000, 1, 0, 0, 1]]);
    const before = await redis.hgetallBuffer(key());
    const reply = await claim(2, [["only", 60_000, 1, 0, 0, 1]]);
    assert.equal(reply[1], 1);
    assert.equal(reply[2], 1);
    assert.ok(Number(reply[4]) > 0);
    assert.deepEqual(await redis.hgetallBuffer(key()), before);
  });

  it("judges the claims of one call in order, each seeing those before it", async () => {
    // one limit shared by three sends of one shape
    const reply = longForm(numbers(await redis.eval(claimSource, 3, key("x"), key("y"), key("x"), 1, 60_000, 1, 0, 0, 0, 0,
      tailBytes(tail(1, 1), tail(2, 1), tail(3, 1)), "", shape([["one", 1]]))), [1, 1, 1]);
    // per claim: allowed, count, held, retry
    assert.deepEqual([reply[1], reply[5], reply[9]], [1, 1, 0]);
  });

  it("reads each send's shape by its index when a call's sends have several", async () => {
    // two limits (1: 1 per min, 2: 2 per min); shape 0 counts "one" and "two" under limit 2, shape 1 counts "one" under limit 1
    const limits = [2, 60_000, 1, 0, 0, 0, 60_000, 2, 0, 0, 0];
    const shapeOf = Buffer.from([0, 0, 0, 1, 0, 0]);
    const reply = numbers(await redis.eval(claimSource, 3, key("s"), key("s"), key("t"), ...limits, 0,
      tailBytes(tail(1, 1), tail(2, 1), tail(3, 1)), shapeOf, shape([["one", 2], ["two", 2]]), shape([["one", 1]])));
    // send 1 (shape 0, two counters): FRESH, 1, 1; send 2 (shape 1: "one" at 1 per min, already 1): refused,
    // its one counter full; send 3 (shape 0, another recipient): FRESH, 1, 1
    assert.deepEqual(reply.slice(1, 4), [2, 1, 1]);
    assert.deepEqual(reply.slice(4, 6), [0, 1]);
    assert.equal(reply[6], 0, "not held");
    assert.ok(reply[7] > 59_000, `waits ${reply[7]}`);
    assert.deepEqual(reply.slice(8), [2, 1, 1]);
    assert.deepEqual(entries(await redis.hgetBuffer(key("s"), "one")).map((e) => e.digest), [1], "the refused send wrote nothing");
  });

  it("refuses a call whose tails are fewer than its sends, naming both", async () => {
    const limits = [1, 60_000, 1, 0, 0, 0];
    await assert.rejects(redis.eval(claimSource, 2, key("a"), key("b"), ...limits, 0, tailBytes(tail(1, 1)), "", shape([["one", 1]])),
      /2 sends but 6 bytes of tails/);
    assert.equal(await redis.exists(key("a"), key("b")), 0, "nothing written");
  });

  it("reads the tails at the end of their argument, whatever bytes come before them", async () => {
    const limits = [1, 60_000, 1, 0, 0, 0];
    const padded = Buffer.concat([Buffer.from("123456"), tailBytes(tail(7, 3))]);
    numbers(await redis.eval(claimSource, 1, key("p"), ...limits, 0, padded, "", shape([["one", 1]])));
    assert.deepEqual(entries(await redis.hgetBuffer(key("p"), "one")).map((e) => [e.digest, e.token]), [[7, 3]]);
  });

  it("answers the longest wait a cap can give in whole ms, no exponent or fraction in the text", async () => {
    // the longest window the schema takes, 366 days: its refusal's wait has 11 digits, the clock 13
    const year = 366 * 86_400_000;
    await claim(1, [["year", year, 1]]);
    const refused = await claim(2, [["year", year, 1]]);
    assert.deepEqual(refused.slice(1, 4), [0, 1, 0]);
    assert.ok(refused[4] > year - 60_000 && refused[4] <= year, `waits ${refused[4]}`);
    assert.ok(Number.isInteger(refused[4]));
  });

  it("is called by SHA after one load", async () => {
    const sha = (await redis.script("LOAD", claimSource)) as string;
    const reply = numbers(await redis.evalsha(sha, 1, key("sha"), ...claimArgs(1, 1, [["c", 1000, 1]])));
    assert.deepEqual(reply.slice(1), [2, 1]);
  });

  it("answers a send with a new slot in every cap in short (FRESH, 2, and the counts), any other in full", async () => {
    const caps: Cap[] = [["a", 60_000, 5], ["b", 60_000, 2]];
    const raw = async (digest: number, token = 1) => numbers(await redis.eval(claimSource, 1, key(), ...claimArgs(digest, token, caps)));
    assert.deepEqual((await raw(1)).slice(1), [2, 1, 1]);
    assert.deepEqual((await raw(2)).slice(1), [2, 2, 2]);
    // its own entry found again (a retry of the same attempt): held, so in full
    assert.deepEqual((await raw(2)).slice(1), [1, 2, 1, -1, 2, 1, -1]);
    // refused by b: in full, with b's wait
    const refused = await raw(3);
    assert.deepEqual(refused.slice(1, 5), [0, 2, 0, -1]);
    assert.ok(Number(refused[7]) > 59_000, `b waits ${refused[7]}`);
  });

  it("release.lua removes only the entries of that digest and token, and a mark only for its member", async () => {
    await claim(9, [["a", 60_000, 5], ["b", 60_000, 5]], 100);
    await claim(10, [["a", 60_000, 5]], 100);
    await redis.set(`${prefix}:{o|r}:d:sms:h`, "m9");
    const given = (await redis.eval(luaScript("release"), 3, key(), key(), `${prefix}:{o|r}:d:sms:h`,
      "c", tail(9, 101), 2, "a", "b", // the right digest, another attempt's token: nothing
      "c", tail(9, 100), 2, "a", "b",
      "m", "m9")) as number[];
    // per item: freed, handed to another attempt
    assert.deepEqual(given, [0, 0, 2, 0, 1, 0]);
    assert.deepEqual(entries(await redis.hgetBuffer(key(), "a")).map((e) => e.digest), [10]);
    assert.equal(await redis.hexists(key(), "b"), 0, "an emptied field is removed");
    assert.equal(await redis.exists(`${prefix}:{o|r}:d:sms:h`), 0);
    // a copy of msg 11 (token 201) holds its first attempt's entry too: that attempt's give-back hands it on
    await claim(11, [["c", 60_000, 5]], 200);
    await claim(11, [["c", 60_000, 5]], 201);
    assert.deepEqual(await redis.eval(luaScript("release"), 1, key(), "c", tail(11, 200), 1, "c"), [0, 1]);
    assert.deepEqual(entries(await redis.hgetBuffer(key(), "c")).map((e) => [e.digest, e.token]), [[11, 201]], "the entry stays, the copy's now");
    assert.deepEqual(await redis.eval(luaScript("release"), 1, key(), "c", tail(11, 201), 1, "c"), [1, 0]);
  });

  it("record.lua adds without checking, once per digest in the window", async () => {
    const record = async (digest: number) => numbers(await redis.eval(luaScript("record"), 1, key(), 1, 60_000, 0, 0, 0, 0, item(tail(digest, 0), [["rec", 1]])));
    assert.deepEqual((await record(1)).slice(1), [1]);
    assert.deepEqual((await record(1)).slice(1), [1]);
    assert.deepEqual((await record(2)).slice(1), [2]);
    assert.deepEqual(entries(await redis.hgetBuffer(key(), "rec")).map((e) => e.token), [0, 0], "record entries belong to no claim attempt");
  });

  it("inspect.lua reads counts and waits of several recipients without writing", async () => {
    await claim(1, [["u", 60_000, 1]]);
    const before = await redis.hgetallBuffer(key());
    const reply = (await redis.eval(luaScript("inspect"), 2, key(), key("other"),
      2, 60_000, 1, 0, 0, 0, 60_000, 3, 0, 0, 0,
      "u,1,none,2",
      "u,1")) as string;
    // one text of integers: now, then per counter its count and retry ms
    assert.match(reply, /^\d{13},1,\d+,0,-1,0,-1$/);
    const [now, , retry] = numbers(reply);
    assert.ok(Math.abs(now - Date.now()) < 5_000, "now, in ms");
    assert.ok(retry > 59_000 && retry <= 60_000, "the full counter frees when its one entry ages out");
    assert.deepEqual(await redis.hgetallBuffer(key()), before);
    assert.equal(await redis.exists(key("other")), 0);
  });

  it("suppression.lua answers several sends, with and without a mark, in order", async () => {
    await redis.hset(`${prefix}:{o|b}:s`, "*", "{}");
    const mark = `${prefix}:{o|a}:d:sms:h`;
    const reply = (await redis.eval(luaScript("suppression"), 4, `${prefix}:{o|a}:s`, mark, `${prefix}:{o|b}:s`, `${prefix}:{o|a}:s`,
      2, "sms", "m1", 60_000,
      1, "sms", "m2", 0,
      1, "sms", "m3", 0)) as (number | string)[];
    assert.deepEqual(reply, [0, 1, 0, 1, "*", "{}", 0, 0, 0]);
  });
});
