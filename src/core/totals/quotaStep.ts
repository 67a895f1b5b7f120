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
 */
export const WINDOW_BUCKETS = 60;

/** Near the end, a lease gets at most this share of what is left: the last slots are not stranded on one idle instance. */
export const LEASE_SHARE = 4;

export interface QuotaLimit {
  max: number;
  /** 0 = lifetime: never resets; -1 = the limit the counter last saw (a give-back, which knows only the key) */
  windowMs: number;
  /** rolling: windowMs / WINDOW_BUCKETS (at least 1 s); calendar: the period; lifetime: 0 */
  bucketMs: number;
  /** calendar: the current period, buckets before it do not count; 0 otherwise */
  periodStartMs: number;
  periodEndMs: number;
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
  /** buckets of spent slots given back into this lease (a refund of a send this lease admitted) */
  refunds: readonly number[];
  /** buckets of spent slots given back to the pool (another lease's, or one that lapsed) */
  frees: readonly number[];
  /** unused slots handed back to the pool */
  giveBack: number;
  /** more slots wanted on lease */
  want: number;
}

export interface QuotaOutcome {
  nowMs: number;
  /** of `spend`, how many were counted (all, unless the lease lapsed and the pool ran dry) */
  accepted: number;
  /** the bucket the spends and records landed in (a refund names it) */
  bucket: number;
  granted: number;
  /** refunds that came back into the lease (a bucket already out of the window gives nothing back) */
  refunded: number;
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

export function bucketOf(limit: QuotaLimit, nowMs: number): number {
  if (limit.windowMs === 0) return 0;
  if (limit.periodStartMs > 0) return limit.periodStartMs;
  return Math.floor(nowMs / limit.bucketMs) * limit.bucketMs;
}

function counts(limit: QuotaLimit, bucket: number, nowMs: number): boolean {
  if (limit.windowMs === 0) return true;
  if (limit.periodStartMs > 0) return bucket >= limit.periodStartMs;
  return bucket + limit.bucketMs > nowMs - limit.windowMs;
}

/** How long the hash must outlive its last write, ms; null = for ever (lifetime). */
export function quotaKeepMs(limit: QuotaLimit, leaseMs: number, nowMs: number): number | null {
  if (limit.windowMs === 0) return null;
  const until = limit.periodStartMs > 0 ? limit.periodEndMs - nowMs : limit.windowMs + limit.bucketMs;
  return Math.max(until, 0) + leaseMs + 60_000;
}

/** The limit a counter keeps beside its buckets (field `m`), so a give-back can be made from its key alone. */
export function savedLimit(fields: QuotaFields): QuotaLimit | undefined {
  const saved = fields.get("m");
  if (saved === undefined) return undefined;
  const [max, windowMs, bucketMs, periodStartMs, periodEndMs] = saved.split(",").map(Number) as [number, number, number, number, number];
  return { max, windowMs, bucketMs, periodStartMs, periodEndMs };
}

/** Applies one request to the counter's fields (in place) and answers it. */
export function quotaStep(fields: QuotaFields, given: QuotaRequest, nowMs: number): QuotaOutcome {
  const saved = given.windowMs < 0 ? savedLimit(fields) : given;
  if (!saved) return { nowMs, accepted: 0, bucket: 0, granted: 0, refunded: 0, lapsed: true, held: 0, used: 0, leased: 0, leases: 0, retryAfterMs: null };
  const r: QuotaRequest = { ...given, ...pickLimit(saved) };
  let used = 0;
  let leased = 0;
  let leases = 0;
  let own: number | undefined;
  let soonest = Number.POSITIVE_INFINITY;
  for (const [field, value] of [...fields]) {
    if (field === "m") continue;
    if (field.startsWith("b")) {
      const bucket = Number(field.slice(1));
      if (!counts(r, bucket, nowMs)) {
        fields.delete(field);
        continue;
      }
      const n = Number(value);
      used += n;
      if (n > 0 && r.windowMs > 0 && r.periodStartMs === 0) soonest = Math.min(soonest, bucket + r.bucketMs + r.windowMs - nowMs);
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
    soonest = Math.min(soonest, expires - nowMs);
  }
  const lapsed = own === undefined;
  let held = own ?? 0;
  const bucket = bucketOf(r, nowMs);
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
  const fresh = Math.min(r.spend - fromLease, Math.max(0, free()));
  const accepted = fromLease + fresh;
  const moved = accepted + r.record;
  if (moved > 0) {
    add(bucket, moved);
    used += moved;
  }
  const giveBack = (b: number): boolean => {
    const n = Number(fields.get(`b${b}`) ?? 0);
    if (n <= 0 || !counts(r, b, nowMs)) return false;
    add(b, -1);
    used -= 1;
    return true;
  };
  let refunded = 0;
  for (const b of r.refunds) {
    if (!giveBack(b)) continue;
    if (r.leaseId !== "") {
      held += 1;
      refunded += 1;
    }
  }
  for (const b of r.frees) giveBack(b);
  held -= Math.min(held, r.giveBack);
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
  if (used > 0 || leased > 0) fields.set("m", `${r.max},${r.windowMs},${r.bucketMs},${r.periodStartMs},${r.periodEndMs}`);
  else fields.delete("m");
  let retryAfterMs: number | null = null;
  if (r.max - used - leased <= 0) {
    if (r.windowMs > 0 && r.periodStartMs > 0) soonest = Math.min(soonest, r.periodEndMs - nowMs);
    retryAfterMs = Number.isFinite(soonest) ? Math.max(0, soonest) : null;
  }
  return { nowMs, accepted, bucket, granted, refunded, lapsed, held, used, leased, leases, retryAfterMs };
}

function pickLimit(l: QuotaLimit): QuotaLimit {
  return { max: l.max, windowMs: l.windowMs, bucketMs: l.bucketMs, periodStartMs: l.periodStartMs, periodEndMs: l.periodEndMs };
}
