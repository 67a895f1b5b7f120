import type { ClaimOutcome, CounterOutcome, CounterSpec, CounterStore, StoreState } from "./counterStore";
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

/** The linger after a window (SPEC §5: expire at window + 60 s), as Redis does. */
const EXPIRY_GRACE_MS = 60_000;
const SWEEP_EVERY_MS = 60_000;

export type Clock = () => number;

const wallClock: Clock = () => performance.timeOrigin + performance.now();

/**
 * The embedded store: the same sorted-set algorithm as lua/claim.lua, in one
 * process. JavaScript runs a claim to completion before the next, so each
 * claim is atomic without locks.
 */
export class MemoryStore implements CounterStore {
  readonly kind = "memory" as const;
  /** in-process and synchronous: a claim cannot time out, so it needs no guard */
  readonly remote = false;
  private readonly counters = new Map<string, Counter>();
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
      if (blocking && spec.max > 0) {
        const last = counter.entries[count - spec.max] as Entry;
        retryAfterMs = Math.max(0, Math.ceil(last.score + spec.windowMs - now));
      }
      if (!blocked) {
        if (!held[i]) insertSorted(counter.entries, { score: now, member });
        counter.expiresAt = now + spec.windowMs + EXPIRY_GRACE_MS;
        this.counters.set(spec.key, counter);
      }
      return { count: counter.entries.length, alreadyHeld: held[i] as boolean, retryAfterMs, blocking };
    });
    return { allowed: !blocked, nowMs: Math.floor(now), counters: outcomes };
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

  /** number of live counters; for tests and metrics */
  size(): number {
    return this.counters.size;
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
  }
}

function insertSorted(entries: Entry[], entry: Entry): void {
  let i = entries.length;
  while (i > 0 && (entries[i - 1] as Entry).score > entry.score) i--;
  entries.splice(i, 0, entry);
}
