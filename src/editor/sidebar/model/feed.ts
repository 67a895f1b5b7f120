/**
 * What the runtime pushes to the Admission sidebar over the editor's
 * websocket (src/nodes/admissionFeed.ts), as the sidebar reads it, and the
 * sums it draws from it. Pure: loaded by the sidebar and by the tests in Node.
 */

/** A gate's counts in one 10-second bucket. */
export interface FeedBucket {
  /** the bucket's start, ms since epoch on the runtime's clock */
  t: number;
  allowed: number;
  skipped: number;
  deferred: number;
  errors: number;
  failOpen?: number;
  held?: number;
  wouldRefuse?: number;
  /** skipped msgs by reason (reason codes of SPEC §3) */
  skippedBy?: Readonly<Record<string, number>>;
}

export interface FeedShadow {
  cap_id: string;
  org: string;
  would_refuse: number;
}

/** `sendgate/admission/<cap-config id>/<gate id>`: one gate's counts. */
export interface FeedGate {
  id: string;
  type: string;
  heldNow?: number;
  /** when the gate's next held msg is due, the runtime's ms since epoch */
  nextDueAt?: number | null;
  left?: readonly { output: string; reason: string; count: number }[];
  errors?: readonly { reason: string; count: number }[];
  shadow?: readonly FeedShadow[];
  recent?: readonly FeedBucket[];
}

/** `sendgate/admission/<cap-config id>`: its send path. */
export interface FeedConfig {
  name: string;
  store: string;
  storeState: string;
  rulesState: string;
  queueLength: number;
  maxQueued: number;
  circuit: string;
  held: number;
}

export interface Bar {
  t: number;
  allowed: number;
  skipped: number;
  deferred: number;
  errors: number;
}

export interface WindowSummary {
  allowed: number;
  skipped: number;
  deferred: number;
  errors: number;
  failOpen: number;
  held: number;
  wouldRefuse: number;
  /** skipped msgs by reason, most first */
  skippedBy: { reason: string; count: number }[];
  /** one bar per bucket slot, oldest first (empty slots are zero) */
  bars: Bar[];
}

export const WINDOW_MS = 5 * 60 * 1000;

/**
 * A gate's last `windowMs` up to `now` (the runtime's clock): the counts of
 * the buckets in it, skipped by reason, and one bar per bucket slot.
 */
export function summarize(gate: FeedGate, now: number, windowMs: number, bucketMs: number): WindowSummary {
  const slots = Math.max(1, Math.round(windowMs / bucketMs));
  const newest = now - (now % bucketMs);
  const oldest = newest - (slots - 1) * bucketMs;
  const bars: Bar[] = [];
  for (let s = 0; s < slots; s++) bars.push({ t: oldest + s * bucketMs, allowed: 0, skipped: 0, deferred: 0, errors: 0 });
  const inWindow = (gate.recent ?? []).filter((b) => b.t >= oldest && b.t <= newest);
  const byReason = new Map<string, number>();
  const sums = { allowed: 0, skipped: 0, deferred: 0, errors: 0, failOpen: 0, held: 0, wouldRefuse: 0 };
  for (const b of inWindow) {
    const bar = bars[Math.round((b.t - oldest) / bucketMs)];
    if (bar) Object.assign(bar, { allowed: b.allowed, skipped: b.skipped, deferred: b.deferred, errors: b.errors });
    for (const [reason, count] of Object.entries(b.skippedBy ?? {})) byReason.set(reason, (byReason.get(reason) ?? 0) + count);
    sums.allowed += b.allowed || 0;
    sums.skipped += b.skipped || 0;
    sums.deferred += b.deferred || 0;
    sums.errors += b.errors || 0;
    sums.failOpen += b.failOpen ?? 0;
    sums.held += b.held ?? 0;
    sums.wouldRefuse += b.wouldRefuse ?? 0;
  }
  const skippedBy = [...byReason].map(([reason, count]) => ({ reason, count }))
    .sort((a, b) => b.count - a.count || (a.reason < b.reason ? -1 : 1));
  return { ...sums, skippedBy, bars };
}

export interface Totals {
  allowed: number;
  skipped: number;
  deferred: number;
  errors: number;
  failOpen: number;
}

/** Everything a gate counted since its cap-config was deployed. */
export function totals(gate: FeedGate): Totals {
  const out: Totals = { allowed: 0, skipped: 0, deferred: 0, errors: 0, failOpen: 0 };
  for (const l of gate.left ?? []) {
    if (l.output === "allowed" || l.output === "skipped" || l.output === "deferred") out[l.output] += l.count;
    if (l.output === "allowed" && (l.reason === "fail_open" || l.reason === "overloaded")) out.failOpen += l.count;
  }
  for (const e of gate.errors ?? []) out.errors += e.count;
  return out;
}

/** The shadow caps a gate saw would refuse, most first. */
export function shadowTotals(gate: FeedGate): FeedShadow[] {
  return [...(gate.shadow ?? [])].sort((a, b) => b.would_refuse - a.would_refuse);
}

/** How much a gate did in the window: what orders busy gates first. */
export function activity(summary: WindowSummary | null, heldNow: number): number {
  if (!summary) return heldNow;
  return summary.allowed + summary.skipped + summary.deferred + summary.errors + heldNow;
}
