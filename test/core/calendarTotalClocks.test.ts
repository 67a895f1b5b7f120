import assert from "node:assert/strict";
import { CapEngine, type CapDecision } from "../../src/core/caps/capEngine";
import { totalCounterKey } from "../../src/core/caps/keys";
import { emptyRecord } from "../../src/core/ownKeys";
import { withDefaults, type CapRuleInput } from "../../src/core/rules/rules";
import type { Send } from "../../src/core/send";
import { StoreAccess } from "../../src/core/store/storeAccess";
import type { AdmissionStore } from "../../src/core/store/admissionStore";
import { MemoryStore } from "../../src/core/store/memoryStore";
import { RedisStore } from "../../src/redis/redisStore";
import { clearOfPeriodEnd } from "../support/calendarClock";
import { dropPrefix, REDIS_URL, redisClient, uniquePrefix } from "../support/redis";

const DAY = 86_400_000;
const DAY_TOTAL: CapRuleInput = { id: "day-total", scope: "global", counts: "total", max_count: 4, window_seconds: 86_400, window_type: "calendar_day" };

/** One instance: its own access to the store and its own clock, which reckons every period it reckons itself. */
function instance(store: AdmissionStore, now: () => number, keyPrefix: string): CapEngine {
  const rules = [withDefaults(DAY_TOTAL)];
  const access = new StoreAccess(store, { failMode: "closed", timeoutMs: 5000, maxQueued: 100_000, warn: () => undefined });
  return new CapEngine({ access, rules: () => rules, keyPrefix, exemptTiers: [], now });
}

function send(id: string): Send {
  return { recipient: id, channel: "push", messageId: id, org: "acme", attributes: emptyRecord(), recipientLimits: emptyRecord() };
}

/** Sends one at a time, as a slow trickle does: each waits for the one before. */
async function sendAll(engine: CapEngine, ids: string[]): Promise<CapDecision[]> {
  const out: CapDecision[] = [];
  for (const id of ids) out.push(await engine.claim(send(id)));
  return out;
}

const admitted = (decisions: CapDecision[]): number => decisions.filter((d) => d.kind === "allowed").length;

/** A total counter's time buckets (field b<start>): start → sends counted. */
function bucketsOf(fields: Iterable<[string, string]>): Map<number, number> {
  const out = new Map<number, number>();
  for (const [field, value] of fields) if (field.startsWith("b")) out.set(Number(field.slice(1)), Number(value));
  return out;
}

describe("a calendar_day total of 4 on two instances whose clocks straddle midnight: A at 23:59:57 sends 4, B (3 s ahead, 00:00:00.5) 1, A 4 more", function () {
  this.timeout(60_000);

  it("on one Redis: 4 admitted in the store's day, B's clock neither opens a new day nor prunes A's", async () => {
    // Redis TIME decides the day: the test runs clear of a real UTC midnight, which would rightly open a new one mid-test
    await clearOfPeriodEnd("calendar_day", "UTC", 30_000);
    const storeDay = Math.floor(Date.now() / DAY) * DAY;
    // the instances' clocks straddle the next midnight (hours ahead of the store's: whatever their clocks)
    const midnight = storeDay + DAY;
    const keyPrefix = uniquePrefix("cal-clocks");
    const stores = [new RedisStore({ url: REDIS_URL }), new RedisStore({ url: REDIS_URL })] as const;
    const a = instance(stores[0], () => midnight - 3000, keyPrefix);
    const b = instance(stores[1], () => midnight + 500, keyPrefix);
    const redis = redisClient();
    try {
      const first = await sendAll(a, ["a1", "a2", "a3", "a4"]);
      const fromB = await sendAll(b, ["b1"]);
      const again = await sendAll(a, ["a5", "a6", "a7", "a8"]);
      assert.deepEqual([admitted(first), admitted(fromB), admitted(again)], [4, 0, 0], "at most max_count (4) in one day, whatever the instances' clocks");
      const refusal = fromB[0];
      assert.equal(refusal.kind, "capped");
      // the store's day ends at its own midnight, not at B's (which passed half a second ago by B's clock)
      const retry = refusal.kind === "capped" ? refusal.retryAfterMs : null;
      assert.ok(retry !== null && retry > 0 && retry <= midnight - storeDay, `retry after ${retry} ms: the end of the store's day`);
      const counted = bucketsOf(Object.entries(await redis.hgetall(totalCounterKey(keyPrefix, "acme", "day-total", []))));
      assert.deepEqual([...counted], [[storeDay, 4]], "one bucket, the store's day, holding the 4 admitted");
    } finally {
      await Promise.all([a.totals.close(), b.totals.close()]);
      await Promise.all(stores.map((s) => s.close()));
      await dropPrefix(redis, keyPrefix);
      await redis.quit();
    }
  });

  it("on one memory store (its own clock between theirs): 4 admitted in its day, B refused until the store's midnight, then A counts into the store's new day", async () => {
    // any midnight: the memory store's clock is the test's
    const midnight = Date.UTC(2025, 2, 10);
    let storeNow = midnight - 1500;
    const store = new MemoryStore(() => storeNow);
    const keyPrefix = uniquePrefix("cal-clocks-mem");
    const a = instance(store, () => midnight - 3000, keyPrefix);
    const b = instance(store, () => midnight + 500, keyPrefix);
    const key = totalCounterKey(keyPrefix, "acme", "day-total", []);
    const buckets = (): Map<number, number> => bucketsOf(store.snapshot().quotas?.find(([k]) => k === key)?.[1].fields ?? []);
    try {
      const first = await sendAll(a, ["a1", "a2", "a3", "a4"]);
      const fromB = await sendAll(b, ["b1"]);
      assert.deepEqual([...buckets()], [[midnight - DAY, 4]], "B, ahead, pruned nothing of the store's day and counted nothing in its own");
      const again = await sendAll(a, ["a5", "a6", "a7", "a8"]);
      assert.deepEqual([admitted(first), admitted(fromB), admitted(again)], [4, 0, 0], "at most max_count (4) in one day, whatever the instances' clocks");
      const refusal = fromB[0];
      assert.deepEqual(refusal.kind === "capped" ? refusal.retryAfterMs : refusal.kind, 1500, "free at the store's midnight");
      // the store's day turns; A's clock still reads the day before, and counts into the store's day all the same
      storeNow = midnight + 1000;
      const next = await sendAll(a, ["a9"]);
      assert.equal(admitted(next), 1);
      assert.deepEqual([...buckets()], [[midnight, 1]], "the day before dropped; A's send counted in the store's new day, not in A's");
    } finally {
      await Promise.all([a.totals.close(), b.totals.close()]);
      await store.close();
    }
  });
});
