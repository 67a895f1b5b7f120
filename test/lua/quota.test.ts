import assert from "node:assert/strict";
import type Redis from "ioredis";
import { luaScript } from "../../src/redis/scripts";
import { clearOfPeriodEnd } from "../support/calendarClock";
import { dropPrefix, redisClient, uniquePrefix } from "../support/redis";

const DAY = 86_400_000;
const WEEK = 7 * DAY;
const LEASE_MS = 10_000;

/** One item's ARGV (12 values): a limit and the work; calendar 1 asks for periods of windowMs by the server's TIME. */
interface Item {
  leaseId?: string;
  max: number;
  windowMs: number;
  calendar: 0 | 1;
  spend?: number;
  record?: number;
  want?: number;
}

/** Per item of a reply: accepted, bucket, granted, refunded, given, lapsed, held, used, leased, leases, retryAfterMs. */
interface Answer { bucket: number; granted: number; used: number; retryAfterMs: number }

/** lua/quota.lua's calendar periods, run straight in Redis with EVAL, no store code in between. */
describe("lua/quota.lua in Redis: a calendar total's period is the server's", () => {
  let redis: Redis;
  let prefix: string;
  const source = luaScript("quota");
  const key = (name: string): string => `${prefix}:t:{o|${name}}`;
  /** Several items in one call, as a batch sends them; the reply's server time, then each item's answer. */
  const run = async (items: [name: string, item: Item][]): Promise<{ now: number; answers: Answer[] }> => {
    const keys = items.flatMap(([name]) => [key(name), `${key(name)}:r`]);
    const args = items.flatMap(([, i]) => [i.leaseId ?? "", LEASE_MS, i.max, i.windowMs, i.windowMs, i.calendar, i.spend ?? 0, i.record ?? 0, "", "", -1, i.want ?? 0]);
    const reply = await redis.eval(source, keys.length, ...keys, ...args) as (number | string)[];
    const answers = items.map((_, n) => {
      const v = (j: number): number => Number(reply[1 + 11 * n + j]);
      return { bucket: v(1), granted: v(2), used: v(7), retryAfterMs: v(10) };
    });
    return { now: Number(reply[0]), answers };
  };
  const buckets = async (name: string): Promise<[number, number][]> => {
    const flat = await redis.call("HGETALL", key(name)) as string[];
    const out: [number, number][] = [];
    for (let i = 0; i < flat.length; i += 2) if (flat[i].startsWith("b")) out.push([Number(flat[i].slice(1)), Number(flat[i + 1])]);
    return out.sort((x, y) => x[0] - y[0]);
  };

  before(() => { redis = redisClient(); });
  after(async () => { await redis.quit(); });
  beforeEach(async () => {
    prefix = uniquePrefix("lua-quota");
    // TIME decides the period: each test's calls fall in one day (and week) when begun clear of its end
    await clearOfPeriodEnd("calendar_day", "UTC", 5_000);
    await clearOfPeriodEnd("calendar_week", "UTC", 5_000);
  });
  afterEach(async () => dropPrefix(redis, prefix));

  it("counts into the UTC day (and the week from Monday 00:00 UTC) that TIME falls in, full until its end, kept that long", async () => {
    const [sec, usec] = await redis.time();
    const { now, answers } = await run([["day", { max: 2, windowMs: DAY, calendar: 1, record: 2 }], ["week", { max: 5, windowMs: WEEK, calendar: 1, record: 1 }]]);
    assert.ok(Math.abs(now - (Number(sec) * 1000 + Math.floor(Number(usec) / 1000))) < 2000, "the server's time");
    const [day, week] = answers as [Answer, Answer];
    assert.equal(day.bucket, Math.floor(now / DAY) * DAY);
    assert.equal(new Date(week.bucket).toISOString().slice(11), "00:00:00.000Z");
    assert.equal(new Date(week.bucket).getUTCDay(), 1, "a Monday");
    assert.ok(week.bucket <= now && now < week.bucket + WEEK);
    assert.deepEqual([await buckets("day"), await buckets("week")], [[[day.bucket, 2]], [[week.bucket, 1]]]);
    const ttl = await redis.pttl(key("day"));
    const keep = day.bucket + DAY - now + LEASE_MS + 60_000;
    assert.ok(ttl <= keep && ttl > keep - 5_000, `pttl ${ttl}: to the day's end, a lease and a minute`);
    const full = await run([["day", { leaseId: "A", max: 2, windowMs: DAY, calendar: 1, want: 1 }]]);
    const refused = full.answers[0];
    assert.deepEqual([refused.granted, refused.used, refused.retryAfterMs], [0, 2, day.bucket + DAY - full.now], "free at the server's next midnight");
  });

  it("drops only buckets of days before the server's: the server's day and a later one (a caller's clock ahead) both count", async () => {
    const { now } = await run([["probe", { max: 1, windowMs: DAY, calendar: 1 }]]);
    const today = Math.floor(now / DAY) * DAY;
    await redis.hset(key("day"), `b${today - DAY}`, 3, `b${today}`, 1, `b${today + DAY}`, 1);
    const read = await run([["day", { max: 4, windowMs: DAY, calendar: 1 }]]);
    assert.equal(read.answers[0]?.used, 2);
    const spent = await run([["day", { leaseId: "A", max: 4, windowMs: DAY, calendar: 1, spend: 5 }]]);
    assert.equal(spent.answers[0]?.used, 4, "what the pool had, and no more");
    assert.deepEqual(await buckets("day"), [[today, 3], [today + DAY, 1]]);
  });

  it("reads each item's 12 values: a calendar item beside a rolling and a lifetime one in one call", async () => {
    const { now, answers } = await run([
      ["day", { max: 3, windowMs: DAY, calendar: 1, record: 1 }],
      ["rolling", { max: 3, windowMs: 60_000, calendar: 0, record: 2 }],
      ["lifetime", { max: 3, windowMs: 0, calendar: 0, record: 3 }],
    ]);
    assert.deepEqual(answers.map((a) => [a.bucket, a.used]), [[Math.floor(now / DAY) * DAY, 1], [Math.floor(now / 60_000) * 60_000, 2], [0, 3]]);
    assert.deepEqual(await redis.hget(key("day"), "m"), `3,${DAY},${DAY},1`);
    assert.deepEqual(await redis.hget(key("rolling"), "m"), "3,60000,60000,0");
  });
});
