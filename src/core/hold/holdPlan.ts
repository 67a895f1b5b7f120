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
 * How much of the span between a msg's due time and its deadline the jitter
 * leaves free: the poller takes a due msg a little after its time (it wakes
 * every few ms, later under load), and a msg taken after its expiresAt leaves
 * by skipped. A jittered time pulled back to the deadline itself was taken
 * just past it, and most of a burst with a near expiresAt left as
 * defer_expired when it could have gone out.
 */
export const RELEASE_MARGIN_MS = 1_000;

/**
 * Hold until `dueAt` (plus `jitterMs` spread, so held demand does not fire at
 * one instant), unless that is past the deadline: then the msg can never be
 * admitted in time and leaves by skipped with defer_expired. The spread stays
 * RELEASE_MARGIN_MS short of the deadline (none when the deadline is closer).
 */
export function planDeferral(dueAt: number | null, jitterMs: number, limits: DeferralLimits, random: () => number = Math.random): DeferralPlan {
  const deadline = deferralDeadline(limits);
  if (dueAt === null || dueAt > deadline) return { kind: "expired", deadline };
  const spread = Math.min(Math.max(0, jitterMs), Math.max(0, deadline - RELEASE_MARGIN_MS - dueAt));
  return { kind: "defer", dueAt: dueAt + Math.floor(random() * spread), firstDeferredAt: limits.firstDeferredAt ?? limits.now, deadline };
}

/**
 * How long a msg a gate keeps for itself (parked, or a throughput-gate's paced
 * msg past its instant) waits for that gate to run again (a tab disabled, a
 * flow removed) before the queue drops it, reporting it: as long as a held
 * msg's default deferMax.
 */
export const ABSENT_GATE_KEEP_MS = 6 * 3600_000;
