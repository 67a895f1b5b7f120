/**
 * The calendar periods of total caps (SPEC §9): a day from 00:00 UTC, a week
 * from Monday 00:00 UTC, reckoned by the store's clock (Redis TIME, the
 * memory store's own), never by a caller's. Instances whose clocks disagree
 * around midnight then all count into one period, and none can prune the
 * period the store is in. lua/quota.lua reckons them the same way.
 */
export const UTC_DAY_MS = 86_400_000;
export const UTC_WEEK_MS = 7 * UTC_DAY_MS;

/** 1970-01-05T00:00Z, a Monday: periods start on it plus whole periods (a day's on every midnight UTC, a week's on every Monday). */
export const PERIOD_EPOCH_MS = 4 * UTC_DAY_MS;

/** The period of `lengthMs` (a day or a week) that the store's `nowMs` falls in. */
export function totalPeriod(nowMs: number, lengthMs: number): { startMs: number; endMs: number } {
  const into = (nowMs - PERIOD_EPOCH_MS) % lengthMs;
  const startMs = nowMs - (into < 0 ? into + lengthMs : into);
  return { startMs, endMs: startMs + lengthMs };
}
