import type { CapRule } from "../rules/rules";
import type { ClaimOutcome, CounterOutcome, CounterSpec } from "../store/admissionStore";
import type { ApplicableCap, BlockingCap, CapDecision, ShadowRefusal } from "./decisions";
import type { QuotaLimit } from "./totals/quotaStep";
import type { TotalCounter, TotalRefusal } from "./totals/totalLeases";

/* What the parts of the cap engine say of caps and decisions alike. */

export const NO_CAPS: ApplicableCap[] = [];
/** the claim outcome of a send with no counter of the recipient's own (nothing in it is ever written to) */
export const NO_COUNTERS: ClaimOutcome = Object.freeze({ allowed: true, nowMs: 0, counters: Object.freeze([]) as unknown as CounterOutcome[] });

export function isTotal(cap: ApplicableCap): boolean {
  return cap.quota !== undefined;
}

export function totalCounter(cap: ApplicableCap): TotalCounter {
  return { key: cap.key, limit: quotaOf(cap) };
}

export function quotaOf(cap: ApplicableCap): QuotaLimit {
  return cap.quota as QuotaLimit;
}

/** A send refused by a total cap: it has no slot left for anyone. */
export function totalRefusal(cap: ApplicableCap, refusal: TotalRefusal): CapDecision {
  const blocking: BlockingCap = { rule: cap.rule, max: cap.max, count: Math.min(cap.max, refusal.used + refusal.leased), retryAfterMs: refusal.retryAfterMs };
  return { kind: "capped", blocking: [blocking], retryAfterMs: refusal.retryAfterMs };
}

/** Whether an allowed claim found every enforced counter of the recipient's already holding its messageId (a retry). */
export function isRetry(decision: Extract<CapDecision, { kind: "allowed" }>): boolean {
  const { caps, outcome } = decision;
  let enforced = 0;
  for (let i = 0; i < caps.length; i++) {
    if (isShadow(caps[i].rule)) continue;
    enforced++;
    if (outcome.counters[i]?.alreadyHeld !== true) return false;
  }
  return enforced > 0;
}

export function isShadow(rule: CapRule): boolean {
  return rule.enforcement === "shadow";
}

export function counterSpecs(caps: readonly ApplicableCap[]): CounterSpec[] {
  const specs = new Array<CounterSpec>(caps.length);
  for (let i = 0; i < caps.length; i++) specs[i] = counterSpec(caps[i]);
  return specs;
}

/** a rolling cap's spec by rule and field, for sends with no recipient limit on it: the same for every such send */
const rollingSpecs = new WeakMap<CapRule, Map<string, Readonly<CounterSpec>>>();
/** fields of one rule kept: a cap split by attribute values has one per value */
const SPECS_KEPT = 1000;

/**
 * A cap's counter spec. Most are shared (a rolling cap, no recipient limit):
 * made once, not for every send, and the store batch tells a run of sends
 * with the same caps by them (redisStore countersArg). Never written to.
 */
function counterSpec(c: ApplicableCap): CounterSpec {
  const shared = c.resetAt === undefined && c.max === c.rule.max_count;
  if (shared) {
    const made = rollingSpecs.get(c.rule)?.get(c.field);
    if (made !== undefined && made.windowMs === c.windowMs) return made;
  }
  // assigned, not spread: a check builds one per counter (58 for 50 ads), and spreads cost more than the rest
  const spec: CounterSpec = { field: c.field, windowMs: c.windowMs, max: c.max };
  if (c.resetAt !== undefined) {
    spec.startMs = c.startMs ?? 0;
    spec.resetAt = c.resetAt;
  }
  if (isShadow(c.rule)) spec.shadow = true;
  if (shared) {
    let byField = rollingSpecs.get(c.rule);
    if (!byField) rollingSpecs.set(c.rule, (byField = new Map<string, Readonly<CounterSpec>>()));
    if (byField.size < SPECS_KEPT) byField.set(c.field, Object.freeze(spec));
  }
  return spec;
}

/** The shadow caps that alone would have refused this admitted send (it took no slot in them), after `more`; undefined when none. */
export function shadowRefusals(caps: readonly ApplicableCap[], outcome: ClaimOutcome, more?: readonly ShadowRefusal[]): ShadowRefusal[] | undefined {
  // an array only when there is one to report: every admitted msg asks
  let refusals: ShadowRefusal[] | undefined;
  const counters = outcome.counters;
  for (let i = 0; i < counters.length; i++) {
    const counter = counters[i];
    const cap = caps[i];
    if (counter.wouldRefuse && cap) (refusals ??= []).push({ cap_id: cap.rule.id, count: counter.count, max: cap.max });
  }
  if (more && more.length > 0) (refusals ??= []).push(...more);
  return refusals;
}

/** A refused claim's decision: the caps that block it, the one that frees last first. */
export function blockedDecision(caps: readonly ApplicableCap[], outcome: ClaimOutcome): CapDecision {
  const blocking: BlockingCap[] = [];
  outcome.counters.forEach((counter, i) => {
    const cap = caps[i];
    if (counter.blocking) blocking.push({ rule: cap.rule, max: cap.max, count: counter.count, retryAfterMs: counter.retryAfterMs });
  });
  // the longest wait first: it names the cap that binds, and frees every other on the way
  blocking.sort((a, b) => rank(b.retryAfterMs) - rank(a.retryAfterMs));
  const first = blocking[0];
  return { kind: "capped", blocking, retryAfterMs: first ? first.retryAfterMs : null };
}

/** A wait as it orders blocking caps: never (null) is the longest. */
export function rank(retryAfterMs: number | null): number {
  return retryAfterMs === null ? Number.POSITIVE_INFINITY : retryAfterMs;
}

/** Resolves with what `decide` answers, or rejects with what it throws (access.failed, closed). */
export function settle<T>(decide: () => T, resolve: (value: T) => void, reject: (err: unknown) => void): void {
  let value: T;
  try {
    value = decide();
  } catch (err) {
    reject(err);
    return;
  }
  resolve(value);
}
