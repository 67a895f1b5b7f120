import { errorReason, reasonLabel, type GateOutput } from "./labels";

/** How the recent past is kept: 30 buckets of 10 s, the last 5 minutes. */
export const BUCKET_MS = 10_000;
export const BUCKETS = 30;

/** What one gate did in one bucket of time. */
export interface CountsBucket {
  /** the bucket's start, ms since epoch */
  t: number;
  allowed: number;
  skipped: number;
  deferred: number;
  errors: number;
  /** allowed because the store failed or the send queue was full (fail_open, overloaded) */
  failOpen: number;
  /** taken into the defer queue */
  held: number;
  /** sends a shadow cap would have refused */
  wouldRefuse: number;
  /** skipped msgs by reason */
  skippedBy: Record<string, number>;
}

/** Keys of one counted series: `<first label>\u0000<second label>`. */
function pair(a: string, b: string): string {
  return `${a}\u0000${b}`;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

export interface ShadowCount {
  cap_id: string;
  /** the rule's org; `*` for an inline rule of every org */
  org: string;
  would_refuse: number;
}

/** A gate's counts as the sidebar and the metrics read them (plain JSON). */
export interface GateSnapshot {
  id: string;
  type: string;
  /** msgs this gate holds in the defer queue now (as last read) */
  heldNow: number;
  /** when the next of them is due, ms since epoch (null: none held) */
  nextDueAt: number | null;
  /** every msg that left an output, by output and reason */
  left: { output: GateOutput; reason: string; count: number }[];
  errors: { reason: string; count: number }[];
  held: { reason: string; count: number }[];
  shadow: ShadowCount[];
  /** the last five minutes, oldest first; buckets with nothing in them are left out */
  recent: CountsBucket[];
}

/**
 * What one gate did, counted as it happens: every msg that left one of its
 * outputs (by output and reason), every msg it sent to Catch, every msg it
 * held, every send a shadow cap would have refused; in totals (for
 * Prometheus) and in 10-second buckets of the last 5 minutes (for the
 * editor's sidebar). Plain numbers in Maps: counting costs a few Map
 * operations, whatever reads them later.
 */
export class GateCounts {
  /** bumped by every change, so a reader can tell whether anything happened since it last looked */
  version = 0;
  /** msgs that left, by output, then by reason */
  readonly left = new Map<GateOutput, Map<string, number>>();
  readonly errors = new Map<string, number>();
  readonly held = new Map<string, number>();
  readonly shadow = new Map<string, ShadowCount>();
  /** msgs this gate's defer queue holds, as last read */
  heldNow = 0;
  /** when its next held msg is due, ms since epoch; null: none held */
  nextDueAt: number | null = null;
  private readonly recent: CountsBucket[] = [];
  /** the bucket in use and when it ends */
  private current: CountsBucket | undefined;
  private currentEnds = 0;

  constructor(readonly id: string, public type: string, private readonly now: () => number = Date.now) {}

  /** A msg left `output`; `reason` is the one its admission names (SPEC §3), checked against the known ones. */
  leftBy(output: GateOutput, reason: unknown): void {
    const label = reasonLabel(reason);
    let byReason = this.left.get(output);
    if (!byReason) this.left.set(output, (byReason = new Map<string, number>()));
    bump(byReason, label);
    const bucket = this.bucket();
    bucket[output]++;
    if (output === "skipped") bucket.skippedBy[label] = (bucket.skippedBy[label] ?? 0) + 1;
    if (output === "allowed" && (label === "fail_open" || label === "overloaded")) bucket.failOpen++;
    this.version++;
  }

  /** A msg went to Catch with `err`. */
  failed(err: unknown): void {
    bump(this.errors, errorReason(err));
    this.bucket().errors++;
    this.version++;
  }

  /** A msg was taken into the defer queue (a deferral or a collapse) for `reason`. */
  heldFor(reason: unknown): void {
    bump(this.held, reasonLabel(reason));
    this.bucket().held++;
    this.version++;
  }

  /** A shadow cap would have refused an admitted send. */
  wouldRefuse(capId: string, org: string | undefined): void {
    const key = pair(org ?? "*", capId);
    const count = this.shadow.get(key);
    if (count) count.would_refuse++;
    else this.shadow.set(key, { cap_id: capId, org: org ?? "*", would_refuse: 1 });
    this.bucket().wouldRefuse++;
    this.version++;
  }

  /** How many msgs this gate's defer queue holds now, and when the next of them is due. */
  holding(count: number, nextDueAt: number | null = null): void {
    if (count === this.heldNow && nextDueAt === this.nextDueAt) return;
    this.heldNow = count;
    this.nextDueAt = nextDueAt;
    this.version++;
  }

  snapshot(): GateSnapshot {
    const start = this.now() - BUCKETS * BUCKET_MS;
    return {
      id: this.id,
      type: this.type,
      heldNow: this.heldNow,
      nextDueAt: this.nextDueAt,
      left: [...this.left].flatMap(([output, byReason]) => [...byReason].map(([reason, count]) => ({ output, reason, count }))),
      errors: [...this.errors].map(([reason, count]) => ({ reason, count })),
      held: [...this.held].map(([reason, count]) => ({ reason, count })),
      shadow: [...this.shadow.values()].map((s) => ({ ...s })),
      recent: this.recent.filter((b) => b.t > start).map((b) => ({ ...b, skippedBy: { ...b.skippedBy } })),
    };
  }

  /** The bucket of now, made when the first thing happens in it. */
  private bucket(): CountsBucket {
    const now = this.now();
    if (this.current && now < this.currentEnds && now >= this.current.t) return this.current;
    const t = now - (now % BUCKET_MS);
    const fresh: CountsBucket = {
      t, allowed: 0, skipped: 0, deferred: 0, errors: 0, failOpen: 0, held: 0, wouldRefuse: 0,
      skippedBy: Object.create(null) as Record<string, number>,
    };
    this.recent.push(fresh);
    if (this.recent.length > BUCKETS) this.recent.shift();
    this.current = fresh;
    this.currentEnds = t + BUCKET_MS;
    return fresh;
  }
}
