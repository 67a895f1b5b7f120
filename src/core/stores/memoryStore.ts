import type {
  AdmissionStore, ClaimOutcome, CounterOutcome, CounterSpec, ReleaseSpec, StoreState,
  SuppressionCheck, SuppressionOutcome, SuppressionWrite,
} from "./admissionStore";
import { StateHolder } from "./stateEmitter";

interface Entry {
  score: number;
  member: string;
}

interface Counter {
  /** ascending by score */
  entries: Entry[];
  expiresAt: number;
}

interface Mark {
  member: string;
  expiresAt: number;
}

/** Everything a memory store holds, as JSON: what it saves on close and loads on start. */
export interface MemorySnapshot {
  version: 1;
  counters: [string, Counter][];
  hashes: [string, [string, string][]][];
  marks: [string, Mark][];
}

/** The linger after a window (SPEC §5: expire at window + 60 s), as Redis does. */
const EXPIRY_GRACE_MS = 60_000;
const SWEEP_EVERY_MS = 60_000;

export type Clock = () => number;

const wallClock: Clock = () => performance.timeOrigin + performance.now();

/**
 * The embedded store: the same algorithms as the scripts in lua/, in one
 * process. JavaScript runs a call to completion before the next, so each
 * call is atomic without locks.
 */
export class MemoryStore implements AdmissionStore {
  readonly kind = "memory" as const;
  /** in-process and synchronous: a call cannot time out, so it needs no guard */
  readonly remote = false;
  private readonly counters = new Map<string, Counter>();
  private readonly hashes = new Map<string, Map<string, string>>();
  private readonly marks = new Map<string, Mark>();
  private readonly stateHolder = new StateHolder("ready");
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly clock: Clock = wallClock) {
    this.sweeper = setInterval(() => this.sweep(), SWEEP_EVERY_MS);
    this.sweeper.unref();
  }

  async claim(member: string, specs: readonly CounterSpec[]): Promise<ClaimOutcome> {
    const now = this.clock();
    const counters = specs.map((spec) => this.pruned(spec.key, now - spec.windowMs, now));
    const held = counters.map((c) => c.entries.some((e) => e.member === member));
    const blocked = specs.some((spec, i) => !held[i] && (counters[i] as Counter).entries.length >= spec.max);

    const outcomes: CounterOutcome[] = specs.map((spec, i) => {
      const counter = counters[i] as Counter;
      const count = counter.entries.length;
      const blocking = blocked && !held[i] && count >= spec.max;
      let retryAfterMs: number | null = null;
      if (blocking && spec.max > 0) retryAfterMs = freeInMs(spec, counter.entries, now);
      if (!blocked) {
        if (!held[i]) insertSorted(counter.entries, { score: now, member });
        this.keep(spec, counter, now);
      }
      return { count: counter.entries.length, alreadyHeld: held[i] as boolean, retryAfterMs, blocking };
    });
    return { allowed: !blocked, nowMs: Math.floor(now), counters: outcomes };
  }

  async inspect(specs: readonly CounterSpec[]): Promise<{ count: number; retryAfterMs: number | null; full: boolean }[]> {
    const now = this.clock();
    return specs.map((spec) => {
      const counter = this.counters.get(spec.key);
      const live = counter && counter.expiresAt > now ? counter.entries.filter((e) => e.score > now - spec.windowMs) : [];
      const full = live.length >= spec.max;
      return { count: live.length, full, retryAfterMs: full && spec.max > 0 ? freeInMs(spec, live, now) : null };
    });
  }

  async record(member: string, specs: readonly CounterSpec[]): Promise<number[]> {
    const now = this.clock();
    return specs.map((spec) => {
      const counter = this.pruned(spec.key, now - spec.windowMs, now);
      if (!counter.entries.some((e) => e.member === member)) insertSorted(counter.entries, { score: now, member });
      this.keep(spec, counter, now);
      return counter.entries.length;
    });
  }

  async release(member: string, claims: readonly ReleaseSpec[]): Promise<number> {
    const now = this.clock();
    let given = 0;
    for (const claim of claims) {
      if (claim.kind === "z") {
        const counter = this.counters.get(claim.key);
        const at = counter ? counter.entries.findIndex((e) => e.member === member) : -1;
        if (counter && at >= 0) {
          counter.entries.splice(at, 1);
          given++;
        }
      } else if (this.liveMark(claim.key, now)?.member === member) {
        this.marks.delete(claim.key);
        given++;
      }
    }
    return given;
  }

  async checkSuppression(check: SuppressionCheck): Promise<SuppressionOutcome> {
    const list = this.hashes.get(check.listKey);
    for (const field of [check.channel, "*"]) {
      const entry = list?.get(field);
      if (entry !== undefined) return { kind: "listed", field, entry };
    }
    if (check.markKey === undefined) return { kind: "clear", mark: "none" };
    const now = this.clock();
    const mark = this.liveMark(check.markKey, now);
    if (!mark) {
      this.marks.set(check.markKey, { member: check.member, expiresAt: now + check.markWindowMs });
      return { kind: "clear", mark: "new" };
    }
    if (mark.member === check.member) return { kind: "clear", mark: "held" };
    return { kind: "duplicate", firstMember: mark.member, retryAfterMs: Math.ceil(mark.expiresAt - now) };
  }

  async writeSuppressions(writes: readonly SuppressionWrite[]): Promise<void> {
    for (const w of writes) {
      this.setField(w.listKey, w.field, w.entry);
      this.setField(w.indexKey, w.indexField, w.entry);
    }
  }

  async listSuppressions(indexKey: string, cursor: string, count: number): Promise<{ cursor: string; entries: string[] }> {
    const all = [...(this.hashes.get(indexKey)?.values() ?? [])];
    const from = Number(cursor) || 0;
    const next = from + count;
    return { cursor: next >= all.length ? "0" : String(next), entries: all.slice(from, next) };
  }

  state(): StoreState {
    return this.stateHolder.get();
  }

  onStateChange(listener: (state: StoreState) => void): () => void {
    return this.stateHolder.subscribe(listener);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }

  snapshot(): MemorySnapshot {
    this.sweep();
    return {
      version: 1,
      counters: [...this.counters],
      hashes: [...this.hashes].map(([key, fields]) => [key, [...fields]]),
      marks: [...this.marks],
    };
  }

  restore(snapshot: MemorySnapshot): void {
    for (const [key, counter] of snapshot.counters) this.counters.set(key, counter);
    for (const [key, fields] of snapshot.hashes) this.hashes.set(key, new Map(fields));
    for (const [key, mark] of snapshot.marks) this.marks.set(key, mark);
    this.sweep();
  }

  private keep(spec: CounterSpec, counter: Counter, now: number): void {
    counter.expiresAt = (spec.resetAt ? Math.max(now, spec.resetAt) : now + spec.windowMs) + EXPIRY_GRACE_MS;
    this.counters.set(spec.key, counter);
  }

  private setField(key: string, field: string, value: string | undefined): void {
    let fields = this.hashes.get(key);
    if (value === undefined) {
      fields?.delete(field);
      if (fields?.size === 0) this.hashes.delete(key);
      return;
    }
    if (!fields) this.hashes.set(key, (fields = new Map()));
    fields.set(field, value);
  }

  private liveMark(key: string, now: number): Mark | undefined {
    const mark = this.marks.get(key);
    if (mark && mark.expiresAt <= now) {
      this.marks.delete(key);
      return undefined;
    }
    return mark;
  }

  private pruned(key: string, cutoff: number, now: number): Counter {
    const counter = this.counters.get(key);
    if (!counter || counter.expiresAt <= now) return { entries: [], expiresAt: 0 };
    let drop = 0;
    while (drop < counter.entries.length && (counter.entries[drop] as Entry).score <= cutoff) drop++;
    if (drop > 0) counter.entries.splice(0, drop);
    return counter;
  }

  private sweep(): void {
    const now = this.clock();
    for (const [key, counter] of this.counters) {
      if (counter.expiresAt <= now) this.counters.delete(key);
    }
    for (const [key, mark] of this.marks) {
      if (mark.expiresAt <= now) this.marks.delete(key);
    }
  }
}

/** ms until a full counter has a free slot: its period's reset, or enough of its oldest entries ageing out. */
function freeInMs(spec: CounterSpec, entries: readonly Entry[], now: number): number {
  if (spec.resetAt) return Math.max(0, Math.ceil(spec.resetAt - now));
  const last = entries[entries.length - spec.max] as Entry;
  return Math.max(0, Math.ceil(last.score + spec.windowMs - now));
}

function insertSorted(entries: Entry[], entry: Entry): void {
  let i = entries.length;
  while (i > 0 && (entries[i - 1] as Entry).score > entry.score) i--;
  entries.splice(i, 0, entry);
}
