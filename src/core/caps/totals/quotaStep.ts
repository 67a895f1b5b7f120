import { totalPeriod } from "./totalPeriod";

/**
 * One call on a total cap's shared counter (SPEC §4 `counts: "total"`): the
 * same algorithm as lua/quota.lua, over the same fields, so the memory store
 * and Redis answer alike.
 *
 * The counter is one hash: `b<start>` = sends counted in the time bucket that
 * starts there, `l<leaseId>` = "<held>,<expiresMs>", the slots a cap-config
 * holds on lease and may spend without asking. Quota left = max − counted −
 * held by every live lease. A lease's holder reports what it spent before a
 * msg leaves (the spend moves from the lease into the current bucket), so a
 * crashed holder's lease can time out and give back its block without the
 * total ever passing max.
 *
 * Buckets keep memory bounded whatever max is: a rolling window counts the
 * buckets that overlap it (at most WINDOW_BUCKETS + 1), so a send frees its
 * slot between window and window + one bucket after it was counted, never
 * earlier; a calendar window keeps one bucket per period; a lifetime total one
 * bucket for ever.
 *
 * A calendar total's period is the store's (totalPeriod: from 00:00 UTC or
 * Monday 00:00 UTC by the store's clock), never the caller's: buckets of
 * earlier periods are dropped, the current one and any later one count (a
 * store whose clock stepped back keeps what it counted), so no caller's clock
 * can count into or prune a period other than the store's.
 */
export const WINDOW_BUCKETS = 60;

/** Near the end, a lease gets at most this share of what is left: the last slots are not stranded on one idle instance. */
export const LEASE_SHARE = 4;

/** A holder hands its unspent slots back after this long without a send (TotalLeases): a third of its lease, up to 1 s. */
export function leaseIdleMs(leaseMs: number): number {
  return Math.min(1000, Math.max(50, Math.floor(leaseMs / 3)));
}

/** A holder's lease id names its leaseMs ("<hex>~<ms>"), so another caller can tell when it has gone idle. */
export function holderLeaseId(hex: string, leaseMs: number): string {
  return `${hex}~${leaseMs}`;
}

/**
 * When another holder's unspent slots (field `l<id>`) may come back: a holder
 * without sends hands them back leaseIdleMs after its last call, far sooner
 * than its lease expires; a refusal's retry_after names that. An id that
 * names no leaseMs (an older holder): at its expiry. The lease is not taken
 * from it then: slots its sends reserved stay theirs while their recipients'
 * caps answer.
 */
function idleFrom(field: string, expires: number): number {
  const named = /~(\d+)$/.exec(field);
  if (!named) return expires;
  const ms = Number(named[1]);
  return Math.min(expires, expires - ms + leaseIdleMs(ms));
}

export interface QuotaLimit {
  max: number;
  /** 0 = lifetime: never resets; calendar: the period's length (a day or a week); -1 = the limit the counter last saw (a give-back, which knows only the key) */
  windowMs: number;
  /** rolling: windowMs / WINDOW_BUCKETS (at least 1 s); calendar: the period; lifetime: 0 */
  bucketMs: number;
  /** calendar: windowMs-long periods from 00:00 UTC (Monday for a week) by the store's clock, buckets before the current one do not count */
  calendar: boolean;
}

export interface QuotaRequest extends QuotaLimit {
  key: string;
  /** the caller's lease; "" = read only (no lease is made or renewed) */
  leaseId: string;
  leaseMs: number;
  /** slots the lease spent since its last call: they move into the current bucket */
  spend: number;
  /** sends counted without checking (record mode) */
  record: number;
  /** spent slots given back into this lease (a refund of a send this lease admitted) */
  refunds: readonly GiveBack[];
  /** spent slots given back to the pool (another lease's, or one that lapsed) */
  frees: readonly GiveBack[];
  /**
   * the slots the caller still holds on its lease after this call's spends
   * (unreserved and reserved by sends in flight): the lease is trimmed to it,
   * so slots the caller never got (an answer lost to a timeout) or handed back
   * do not stay out; -1 = no trim
   */
  keep: number;
  /** more slots wanted on lease */
  want: number;
}

/** One spent slot given back: where it was counted, and its spend's identity (each is given back once). */
export interface GiveBack {
  bucket: number;
  /** unique per spend: `<lease>.<batch>.<index>` */
  id: string;
  /** when it was spent (the store's clock) */
  atMs: number;
}

/** A give-back older than this is refused: the ids given back are remembered this long. */
export const GIVE_BACK_HORIZON_MS = 86_400_000;

export interface QuotaOutcome {
  nowMs: number;
  /** of `spend`, how many were counted (all, unless the lease lapsed and the pool ran dry) */
  accepted: number;
  /** the bucket the spends and records landed in (a refund names it) */
  bucket: number;
  granted: number;
  /** refunds that came back into the lease (a bucket already out of the window gives nothing back) */
  refunded: number;
  /** per give-back, refunds then frees: "1" taken, "0" not (already given back, older than a day, or out of the window) */
  given: string;
  /** the lease was not there (it lapsed, or was never made): held slots the caller counted on are gone */
  lapsed: boolean;
  /** this lease's slots after the call */
  held: number;
  /** counted in the window */
  used: number;
  /** held by every live lease, this one included */
  leased: number;
  leases: number;
  /** ms until a slot may free when none is left (a bucket leaves the window, a period ends, a lease lapses); null = never */
  retryAfterMs: number | null;
}

export type QuotaFields = Map<string, string>;

/** A calendar limit's current period by the store's clock; undefined for a rolling or lifetime one. */
function periodOf(limit: QuotaLimit, nowMs: number): { startMs: number; endMs: number } | undefined {
  return limit.calendar && limit.windowMs > 0 ? totalPeriod(nowMs, limit.windowMs) : undefined;
}

function bucketOf(limit: QuotaLimit, period: { startMs: number } | undefined, nowMs: number): number {
  if (limit.windowMs === 0) return 0;
  if (period) return period.startMs;
  return Math.floor(nowMs / limit.bucketMs) * limit.bucketMs;
}

function counts(limit: QuotaLimit, period: { startMs: number } | undefined, bucket: number, nowMs: number): boolean {
  if (limit.windowMs === 0) return true;
  if (period) return bucket >= period.startMs;
  return bucket + limit.bucketMs > nowMs - limit.windowMs;
}

/** How long the hash must outlive its last write, ms; null = for ever (lifetime). */
export function quotaKeepMs(limit: QuotaLimit, leaseMs: number, nowMs: number): number | null {
  if (limit.windowMs === 0) return null;
  const period = periodOf(limit, nowMs);
  const until = period ? period.endMs - nowMs : limit.windowMs + limit.bucketMs;
  return Math.max(until, 0) + leaseMs + 60_000;
}

/**
 * The limit a counter keeps beside its buckets (field `m`, "max,windowMs,bucketMs,calendar 1/0"), so a give-back can
 * be made from its key alone. Five values ("max,windowMs,bucketMs,periodStart,periodEnd": a counter saved with its
 * caller's period) read the same: the fourth is above 0 exactly when the limit is a calendar one.
 */
export function savedLimit(fields: QuotaFields): QuotaLimit | undefined {
  const saved = fields.get("m");
  if (saved === undefined) return undefined;
  const [max, windowMs, bucketMs, calendar] = saved.split(",").map(Number) as [number, number, number, number | undefined];
  return { max, windowMs, bucketMs, calendar: (calendar ?? 0) > 0 };
}

/** Applies one request to the counter's fields (in place) and answers it. */
export function quotaStep(fields: QuotaFields, given: QuotaRequest, nowMs: number, givenBack: Map<string, number>): QuotaOutcome {
  const saved = given.windowMs < 0 ? savedLimit(fields) : given;
  if (!saved) return { nowMs, accepted: 0, bucket: 0, granted: 0, refunded: 0, given: "0".repeat(given.refunds.length + given.frees.length), lapsed: true, held: 0, used: 0, leased: 0, leases: 0, retryAfterMs: null };
  const r: QuotaRequest = { ...given, ...pickLimit(saved) };
  const period = periodOf(r, nowMs);
  let used = 0;
  let leased = 0;
  let leases = 0;
  let own: number | undefined;
  let soonest = Number.POSITIVE_INFINITY;
  for (const [field, value] of [...fields]) {
    if (field === "m") continue;
    if (field.startsWith("b")) {
      const bucket = Number(field.slice(1));
      if (!counts(r, period, bucket, nowMs)) {
        fields.delete(field);
        continue;
      }
      const n = Number(value);
      used += n;
      if (n > 0 && r.windowMs > 0 && !period) soonest = Math.min(soonest, bucket + r.bucketMs + r.windowMs - nowMs);
      continue;
    }
    const [held, expires] = value.split(",").map(Number) as [number, number];
    if (expires <= nowMs) {
      fields.delete(field);
      continue;
    }
    if (field === `l${r.leaseId}`) {
      own = held;
      continue;
    }
    leased += held;
    leases += 1;
    // past it, its holder did not hand them back (its sends still use them): at its expiry
    const from = idleFrom(field, expires);
    soonest = Math.min(soonest, (from > nowMs ? from : expires) - nowMs);
  }
  const lapsed = own === undefined;
  // a lease never holds more than the max leaves it (the max was lowered, or another lease refilled the pool)
  let held = Math.min(own ?? 0, Math.max(0, r.max - used - leased));
  const bucket = bucketOf(r, period, nowMs);
  const free = (): number => r.max - used - leased - held;
  const add = (b: number, n: number): void => {
    const field = `b${b}`;
    const after = Number(fields.get(field) ?? 0) + n;
    if (after > 0) fields.set(field, String(after));
    else fields.delete(field);
  };

  // spends from the lease first; past it (a lapsed lease), only what the pool still has
  const fromLease = Math.min(r.spend, held);
  held -= fromLease;
  // what came from the lease is counted before the pool is asked for the rest
  used += fromLease;
  const fresh = Math.min(r.spend - fromLease, Math.max(0, free()));
  const accepted = fromLease + fresh;
  used += fresh + r.record;
  if (accepted + r.record > 0) add(bucket, accepted + r.record);
  if (r.keep >= 0 && r.leaseId !== "") held = Math.min(held, r.keep);
  if (r.refunds.length + r.frees.length > 0) {
    for (const [id, at] of givenBack) if (at < nowMs - GIVE_BACK_HORIZON_MS) givenBack.delete(id);
  }
  const giveBack = (g: GiveBack): boolean => {
    const n = Number(fields.get(`b${g.bucket}`) ?? 0);
    if (n <= 0 || !counts(r, period, g.bucket, nowMs) || g.atMs < nowMs - GIVE_BACK_HORIZON_MS || givenBack.has(g.id)) return false;
    givenBack.set(g.id, g.atMs);
    add(g.bucket, -1);
    used -= 1;
    return true;
  };
  let refunded = 0;
  let takenFlags = "";
  for (const g of r.refunds) {
    const taken = giveBack(g);
    takenFlags += taken ? "1" : "0";
    // back into the lease up to a grant's share of what is free, the rest to the pool: a burst of refunds does not
    // strand the total on this instance while the others refuse
    if (taken && r.leaseId !== "" && held < Math.max(1, Math.floor((r.max - used - leased) / LEASE_SHARE))) {
      held += 1;
      refunded += 1;
    }
  }
  for (const g of r.frees) takenFlags += giveBack(g) ? "1" : "0";
  let granted = 0;
  if (r.want > 0 && r.leaseId !== "") {
    const left = free();
    if (left > 0) granted = Math.min(r.want, left, Math.max(1, Math.floor(left / LEASE_SHARE)));
    held += granted;
  }
  if (r.leaseId !== "") {
    if (held > 0) fields.set(`l${r.leaseId}`, `${held},${nowMs + r.leaseMs}`);
    else fields.delete(`l${r.leaseId}`);
  }
  if (held > 0) leases += 1;
  leased += held;
  if (used > 0 || leased > 0) fields.set("m", `${r.max},${r.windowMs},${r.bucketMs},${period ? 1 : 0}`);
  else fields.delete("m");
  let retryAfterMs: number | null = null;
  if (r.max - used - leased <= 0) {
    if (period) soonest = Math.min(soonest, period.endMs - nowMs);
    retryAfterMs = Number.isFinite(soonest) ? Math.max(0, soonest) : null;
  }
  return { nowMs, accepted, bucket, granted, refunded, given: takenFlags, lapsed, held, used, leased, leases, retryAfterMs };
}

function pickLimit(l: QuotaLimit): QuotaLimit {
  return { max: l.max, windowMs: l.windowMs, bucketMs: l.bucketMs, calendar: l.calendar };
}
