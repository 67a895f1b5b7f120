/** How long a gate may hold a msg, and until when (SPEC §6). */
export interface DeferralLimits {
  now: number;
  /** the gate's deferMax, ms */
  deferMaxMs: number;
  /** when the msg was first deferred (it may come round the chain several times) */
  firstDeferredAt?: number;
  /** the send's own expiresAt */
  expiresAt?: number;
}

export type DeferralPlan =
  /** deadline: the last instant it may be released (expiresAt or deferMax) */
  | { kind: "defer"; dueAt: number; firstDeferredAt: number; deadline: number }
  | { kind: "expired"; deadline: number };

/** The last instant a msg may still be released. */
export function deferralDeadline(limits: DeferralLimits): number {
  const first = limits.firstDeferredAt ?? limits.now;
  return Math.min(limits.expiresAt ?? Number.POSITIVE_INFINITY, first + limits.deferMaxMs);
}

/**
 * Hold until `dueAt` (plus `jitterMs` spread, so held demand does not fire at
 * one instant), unless that is past the deadline: then the msg can never be
 * admitted in time and leaves by skipped with defer_expired. A jittered time
 * past the deadline is pulled back to it.
 */
export function planDeferral(dueAt: number | null, jitterMs: number, limits: DeferralLimits, random: () => number = Math.random): DeferralPlan {
  const deadline = deferralDeadline(limits);
  if (dueAt === null || dueAt > deadline) return { kind: "expired", deadline };
  const jittered = dueAt + Math.floor(random() * Math.max(0, jitterMs));
  return { kind: "defer", dueAt: Math.min(jittered, deadline), firstDeferredAt: limits.firstDeferredAt ?? limits.now, deadline };
}
