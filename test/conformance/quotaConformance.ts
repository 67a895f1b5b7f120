import assert from "node:assert/strict";
import { StoreUnavailableError } from "../../src/core/errors";
import type { AdmissionStore, Settled } from "../../src/core/store/admissionStore";
import { totalCounterKey } from "../../src/core/caps/keys";
import type { GiveBack, QuotaLimit, QuotaOutcome, QuotaRequest } from "../../src/core/caps/totals/quotaStep";
import { MemoryStore } from "../../src/core/store/memoryStore";
import type { RedisStore } from "../../src/redis/redisStore";
import { clearOfPeriodEnd } from "../support/calendarClock";
import { sleep, uniquePrefix } from "../support/redis";

function answered<T>(result: Settled<T> | undefined): T {
  if (result === undefined || result instanceof StoreUnavailableError) throw result ?? new Error("no answer");
  return result;
}

const LIFETIME: QuotaLimit = { max: 100, windowMs: 0, bucketMs: 0, calendar: false };
const DAY = 86_400_000;
const WEEK = 7 * DAY;
const CALENDAR_DAY: QuotaLimit = { max: 2, windowMs: DAY, bucketMs: DAY, calendar: true };
/** a give-back that knows only the counter's key: the store uses the limit the counter saved */
const SAVED: QuotaLimit = { max: 0, windowMs: -1, bucketMs: 0, calendar: false };

/** Writes fields into a counter as another writer left them (a caller with another clock, another layout). */
async function seed(store: AdmissionStore, key: string, fields: [string, string][]): Promise<void> {
  if (store instanceof MemoryStore) store.restore({ version: 2, counters: [], hashes: [], marks: [], quotas: [[key, { expiresAt: null, fields }]] });
  else await (store as RedisStore).client.hset(key, ...fields.flat());
}

/** A counter's fields as the store holds them. */
async function fieldsOf(store: AdmissionStore, key: string): Promise<[string, string][]> {
  if (store instanceof MemoryStore) return store.snapshot().quotas?.find(([k]) => k === key)?.[1].fields ?? [];
  const flat = await (store as RedisStore).client.call("HGETALL", key) as string[];
  return Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i], flat[2 * i + 1]]);
}

/** The time buckets (fields b<start>) of a counter: [start, count], by start. */
function bucketsOf(fields: [string, string][]): [number, number][] {
  return fields.filter(([f]) => f.startsWith("b")).map(([f, v]): [number, number] => [Number(f.slice(1)), Number(v)]).sort((x, y) => x[0] - y[0]);
}

/**
 * Total caps' shared counters (lua/quota.lua, src/core/totals/quotaStep.ts):
 * the memory store and Redis (single and cluster) give the same answers.
 */
export function quotaConformance(label: string, open: () => Promise<AdmissionStore>, close: (s: AdmissionStore) => Promise<void>): void {
  describe(`total cap counter conformance: ${label}`, function () {
    this.timeout(20_000);
    let store: AdmissionStore;
    let key: string;
    const call = async (leaseId: string, work: Partial<QuotaRequest>, limit: QuotaLimit = LIFETIME): Promise<QuotaOutcome> => answered((await store.quota([{
      key, leaseId, leaseMs: 10_000, ...limit, spend: 0, record: 0, refunds: [], frees: [], keep: -1, want: 0, ...work,
    }]))[0]);

    beforeEach(async () => {
      store = await open();
      key = totalCounterKey(uniquePrefix("quota"), "acme", "ad-total", ["ad 1"]);
    });
    afterEach(async () => close(store));

    it("leases at most a quarter of what is left, down to 1 near the end, and never past max", async () => {
      const first = await call("A", { want: 1000 });
      assert.deepEqual([first.granted, first.held, first.leased, first.used, first.lapsed], [25, 25, 25, 0, true]);
      const second = await call("B", { want: 1000 });
      assert.equal(second.granted, 18, "a quarter of the 75 left");
      let total = first.granted + second.granted;
      for (let i = 0; i < 200; i++) total += (await call(i % 2 === 0 ? "A" : "B", { want: 1000 })).granted;
      assert.equal(total, 100, "every slot leased, none twice");
      const last = await call("C", { want: 1 });
      assert.equal(last.granted, 0);
      // the soonest a slot may free: a lease lapsing (ids that name no leaseMs, as earlier versions made them, are never taken back idle)
      assert.equal(last.retryAfterMs !== null && last.retryAfterMs > 9_000, true, "the soonest a slot may free: a lease lapsing");
    });

    it("a refusal while other holders' leases hold the slots names when an idle holder hands them back (a third of its leaseMs, up to 1 s), not the lease's expiry; the leases stay theirs", async () => {
      // each id names its leaseMs, as TotalLeases makes them
      const lease = { leaseMs: 1500 };
      const a = await call("A~1500", { ...lease, want: 1000 });
      assert.equal(a.granted, 25);
      let b = 0;
      for (let i = 0; i < 50; i++) b += (await call("B~1500", { ...lease, want: 1000 })).granted;
      assert.equal(b, 75, "B leased the rest");
      const refused = await call("C~1500", { ...lease, want: 1 });
      assert.equal(refused.granted, 0);
      assert.ok(refused.retryAfterMs !== null && refused.retryAfterMs <= 500, `retry after ${refused.retryAfterMs} ms: when A's and B's holders, idle, hand their slots back`);
      await sleep(600);
      // their holders did not hand them back (their sends still use them): the leases are theirs until they expire
      const still = await call("C~1500", { ...lease, want: 1 });
      assert.equal(still.granted, 0, "no lease is taken from its holder");
      assert.ok(still.retryAfterMs !== null && still.retryAfterMs > 0 && still.retryAfterMs <= 900, `retry after ${still.retryAfterMs} ms: the leases' expiry`);
      const spent = await call("A~1500", { ...lease, spend: 3 });
      assert.deepEqual([spent.lapsed, spent.accepted], [false, 3], "A spends from its own lease");
    });

    it("refunds come back into the lease only up to a grant's share of what is free; the rest goes to the pool", async () => {
      const max = { ...LIFETIME, max: 100 };
      let held = 0;
      for (let i = 0; i < 50 && held < 100; i++) held += (await call("A", { want: 1000 }, max)).granted;
      assert.equal(held, 100);
      const spent = await call("A", { spend: 100 }, max);
      assert.equal(spent.used, 100);
      const back = Array.from({ length: 100 }, (_, i): GiveBack => ({ bucket: spent.bucket, id: `r${i}`, atMs: spent.nowMs }));
      const refunded = await call("A", { refunds: back, keep: 0 }, max);
      assert.equal(refunded.used, 0, "every spend given back");
      assert.ok(refunded.held >= 20 && refunded.held <= 25, `A keeps a quarter or so, not all 100: ${refunded.held}`);
      const b = await call("B", { want: 1000 }, max);
      assert.ok(b.granted > 0, "the rest is in the pool for the others at once");
    });

    it("moves spends from the lease into the count; a lease that lapsed spends only what the pool has", async () => {
      await call("A", { want: 8 });
      const spent = await call("A", { spend: 5 });
      assert.deepEqual([spent.accepted, spent.held, spent.used, spent.lapsed], [5, 3, 5, false]);
      await call("B", { want: 1000 });
      const pool = await call("", {});
      const free = 100 - pool.used - pool.leased;
      // C never had a lease: its spends count only while the pool has slots
      const fresh = await call("C", { spend: free + 7 });
      assert.equal(fresh.accepted, free);
      assert.equal(fresh.lapsed, true);
      const after = await call("", {});
      assert.equal(after.used + after.leased, 100);
    });

    it("a lapsed lease's unspent slots return to the pool, its spent ones stay counted", async () => {
      const short = { leaseMs: 300 };
      await call("A", { ...short, want: 1000 });
      await call("A", { ...short, spend: 10 });
      const held = await call("", {});
      assert.deepEqual([held.used, held.leased, held.leases], [10, 15, 1]);
      await sleep(450);
      const lapsed = await call("", {});
      assert.deepEqual([lapsed.used, lapsed.leased, lapsed.leases], [10, 0, 0]);
      const again = await call("A", { spend: 1 });
      assert.equal(again.lapsed, true, "the holder learns its lease is gone");
      assert.equal(again.accepted, 1, "and its late spend is taken from the pool");
    });

    it("gives back: a lease trimmed to what its holder keeps, refunds into the lease, frees to the pool, each spend once; a bucket no longer counted gives nothing", async () => {
      await call("A", { want: 40 });
      const spent = await call("A", { spend: 4 });
      const back = (id: string): GiveBack => ({ bucket: spent.bucket, id, atMs: spent.nowMs });
      const given = await call("A", { refunds: [back("s1"), back("s2"), back("s1")], frees: [back("s3")], keep: 11 });
      assert.deepEqual([given.given, given.refunded, given.used, given.held], ["1101", 2, 1, 11 + 2]);
      const twice = await call("B", { frees: [back("s3"), back("s4"), back("s4")] });
      assert.deepEqual([twice.given, twice.used], ["010", 0], "a spend given back once only, and a bucket never below zero");
      const gone = await call("A", { refunds: [{ bucket: 12345, id: "old", atMs: spent.nowMs }] });
      assert.deepEqual([gone.given, gone.refunded], ["0", 0]);
      const stale = await call("A", { spend: 1 });
      const tooOld = await call("B", { frees: [{ bucket: stale.bucket, id: "stale", atMs: stale.nowMs - 2 * 86_400_000 }] });
      assert.deepEqual([tooOld.given, tooOld.used], ["0", 1], "a give-back older than a day is refused");
    });

    it("a lease holds no more than a lowered max leaves it", async () => {
      const wide = { ...LIFETIME, max: 1000 };
      assert.equal((await call("A", { want: 1000 }, wide)).granted, 250);
      const narrow = await call("A", { spend: 250 }, { ...LIFETIME, max: 100 });
      assert.deepEqual([narrow.accepted, narrow.used], [100, 100], "never past the max, not even by the slots the lease held");
    });

    it("record mode counts past max; a give-back by key alone uses the limit the counter saved", async () => {
      const recorded = await call("", { record: 150 });
      assert.equal(recorded.used, 150);
      assert.equal(recorded.retryAfterMs, null, "a lifetime total over its max never frees");
      const byKey = await call("", { frees: [{ bucket: recorded.bucket, id: "r1", atMs: recorded.nowMs }] }, SAVED);
      assert.equal(byKey.used, 149);
      const unknown = totalCounterKey(uniquePrefix("quota"), "acme", "none", []);
      const none = answered((await store.quota([{ key: unknown, leaseId: "A", leaseMs: 10_000, max: 0, windowMs: -1, bucketMs: 0, calendar: false, spend: 0, record: 0, refunds: [{ bucket: 0, id: "x", atMs: Date.now() }], frees: [], keep: -1, want: 0 }]))[0]);
      assert.deepEqual([none.used, none.refunded, none.held, none.given], [0, 0, 0, "0"]);
    });

    it("a rolling total frees a slot between one window and one bucket after it was counted, never earlier", async () => {
      const rolling: QuotaLimit = { max: 1, windowMs: 1000, bucketMs: 1000, calendar: false };
      // counted 250–450 ms into its 1 s bucket: the slot frees at the bucket's start + 2 s, some 1.55–1.75 s later, so the
      // check 50 ms before the window's end does not race the bucket leaving the window (counted in a second's last 50 ms,
      // a check that ran 50 ms late found the slot free); and a slot freed a bucket early (bucket start + window) shows in it
      const into = Date.now() % 1000;
      if (into < 250 || into > 450) await sleep((1250 - into) % 1000);
      const first = await call("", { record: 1 }, rolling);
      const refused = await call("A", { want: 1 }, rolling);
      assert.equal(refused.granted, 0);
      const wait = refused.retryAfterMs ?? -1;
      assert.ok(wait >= first.nowMs + 1000 - refused.nowMs && wait <= 2000, `wait ${wait}`);
      await sleep(Math.max(0, first.nowMs + 1000 - Date.now() - 50));
      assert.equal((await call("A", { want: 1 }, rolling)).granted, 0, "not before the window has passed");
      await sleep(Math.max(0, first.bucket + 2000 - Date.now() + 100));
      assert.equal((await call("A", { want: 1 }, rolling)).granted, 1, "free once its bucket left the window");
    });

    it("a calendar total counts in the store's own period: a day from 00:00 UTC, a week from Monday 00:00 UTC, full until it ends", async () => {
      // the store's clock decides: the calls below fall in one period when begun clear of its end
      await clearOfPeriodEnd("calendar_day", "UTC", 5_000);
      await clearOfPeriodEnd("calendar_week", "UTC", 5_000);
      const recorded = await call("", { record: 2 }, CALENDAR_DAY);
      assert.equal(recorded.bucket, Math.floor(recorded.nowMs / DAY) * DAY, "the store's UTC day");
      const full = await call("A", { want: 1 }, CALENDAR_DAY);
      assert.deepEqual([full.granted, full.used, full.retryAfterMs], [0, 2, recorded.bucket + DAY - full.nowMs], "free at the store's next midnight");
      const week = await call("", { key: `${key}:w`, record: 1 }, { max: 5, windowMs: WEEK, bucketMs: WEEK, calendar: true });
      assert.equal(new Date(week.bucket).toISOString().slice(11), "00:00:00.000Z");
      assert.equal(new Date(week.bucket).getUTCDay(), 1, "a Monday");
      assert.ok(week.bucket <= week.nowMs && week.nowMs < week.bucket + WEEK, "the week the store is in");
    });

    it("no caller's clock moves the store's period: buckets of earlier periods are dropped, the store's and later ones count, spends land in the store's", async () => {
      await clearOfPeriodEnd("calendar_day", "UTC", 5_000);
      const today = Math.floor(Date.now() / DAY) * DAY;
      // as callers whose clocks were a day behind and a day ahead left them
      await seed(store, key, [[`b${today - DAY}`, "3"], [`b${today}`, "1"], [`b${today + DAY}`, "1"]]);
      const four = { ...CALENDAR_DAY, max: 4 };
      const read = await call("", {}, four);
      assert.equal(read.used, 2, "the day before dropped; the store's day and the one after count");
      const recorded = await call("", { record: 1 }, four);
      assert.equal(recorded.bucket, today);
      assert.deepEqual(bucketsOf(await fieldsOf(store, key)), [[today, 2], [today + DAY, 1]]);
      const spent = await call("A", { spend: 5 }, four);
      assert.deepEqual([spent.accepted, spent.used], [1, 4], "never past max in the store's day");
    });

    it("a counter whose saved limit names its caller's period (five values) still serves a give-back by key alone, and is saved in the store's form", async () => {
      await clearOfPeriodEnd("calendar_day", "UTC", 5_000);
      const today = Math.floor(Date.now() / DAY) * DAY;
      await seed(store, key, [[`b${today}`, "2"], ["m", `2,${DAY},${DAY},${today},${today + DAY}`]]);
      const byKey = await call("", { frees: [{ bucket: today, id: "f1", atMs: Date.now() }] }, SAVED);
      assert.deepEqual([byKey.given, byKey.used, byKey.bucket, byKey.retryAfterMs], ["1", 1, today, null]);
      assert.equal(new Map(await fieldsOf(store, key)).get("m"), `2,${DAY},${DAY},1`);
      const full = await call("A", { spend: 2 }, CALENDAR_DAY);
      assert.deepEqual([full.accepted, full.used], [1, 2]);
    });
  });
}
