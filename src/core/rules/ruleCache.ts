import type { CapRule } from "./rules";
import { RulesUnavailableError } from "./errors";

/** `ok`: rules come from the database; `stale`: it failed, the last rules loaded are serving. */
export type RulesState = "ok" | "stale";

export type RuleLoader = (org: string, channel: string) => Promise<readonly CapRule[]>;

export interface RuleCacheOptions {
  load: RuleLoader;
  /** how long a loaded rule list answers without asking the database (30 s) */
  ttlMs?: number;
  /** during an outage, how long after an attempt the next access of a key tries again (1 s) */
  retryMs?: number;
  /** how many (org, channel) keys are kept; the oldest is dropped past it (10 000): orgs come from msgs */
  maxKeys?: number;
  /** told once when an outage starts and once when it ends */
  warn: (text: string) => void;
  now?: () => number;
  /** counts hits, misses and invalidations (the metrics) */
  stats?: RuleCacheStats;
}

/**
 * How the cache serves: a hit answers from memory; a miss waits for a load
 * (or serves stale rules while the database is down); an invalidation forgets
 * one channel's list, every channel of an org (a global rule changed) or all.
 */
export class RuleCacheStats {
  hits = 0;
  misses = 0;
  readonly invalidations = { channel: 0, org: 0, all: 0 };
}

/** The cache entry of one (org, channel). */
interface Slot {
  org: string;
  rules: readonly CapRule[] | undefined;
  loadedAt: number;
  /** false once invalidated: the rules are only a fallback until reloaded */
  valid: boolean;
  attemptedAt: number;
  lastError: unknown;
  inflight: Promise<readonly CapRule[]> | undefined;
  /** bumped by every invalidation; a load started before it is not fresh */
  generation: number;
}

export const DEFAULT_RULES_TTL_MS = 30_000;
export const DEFAULT_RULES_RETRY_MS = 1_000;
export const DEFAULT_RULES_MAX_KEYS = 10_000;

function keyOf(org: string, channel: string): string {
  return `${org}\u0000${channel}`;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The rule list of each (org, channel) (its own rules and the org's global
 * ones), loaded once per TTL, one load per key however many sends miss at once.
 * A fresh key is answered from memory. When loading fails the last rules
 * loaded keep serving (state `stale`) and the key is retried in the background
 * after `retryMs`; the first successful load ends the outage.
 */
export class RuleCache {
  /** by (org, channel), oldest first */
  private readonly slots = new Map<string, Slot>();
  private readonly listeners = new Set<(state: RulesState) => void>();
  private current: RulesState = "ok";
  private readonly ttlMs: number;
  private readonly retryMs: number;
  private readonly maxKeys: number;
  private readonly now: () => number;

  constructor(private readonly options: RuleCacheOptions) {
    this.ttlMs = options.ttlMs ?? DEFAULT_RULES_TTL_MS;
    this.retryMs = options.retryMs ?? DEFAULT_RULES_RETRY_MS;
    this.maxKeys = Math.max(1, options.maxKeys ?? DEFAULT_RULES_MAX_KEYS);
    this.now = options.now ?? Date.now;
  }

  /** The rules of a send on (org, channel); rejects with RulesUnavailableError only when none were ever loaded. */
  get(org: string, channel: string): Promise<readonly CapRule[]> {
    const slot = this.slot(org, channel);
    const now = this.now();
    const stats = this.options.stats;
    if (this.isFresh(slot, now)) {
      if (stats) stats.hits++;
      return Promise.resolve(slot.rules as readonly CapRule[]);
    }
    if (stats) stats.misses++;
    if (this.current === "stale") {
      const due = now - slot.attemptedAt >= this.retryMs;
      if (slot.rules) {
        if (due) this.refresh(org, channel, slot).catch(() => undefined);
        return Promise.resolve(slot.rules);
      }
      if (!due) return Promise.reject(this.unavailable(org, channel, slot.lastError));
    }
    return this.refresh(org, channel, slot);
  }

  /** The fresh rules of (org, channel) if cached, without loading. */
  peek(org: string, channel: string): readonly CapRule[] | undefined {
    const slot = this.slots.get(keyOf(org, channel));
    if (!slot || !this.isFresh(slot, this.now())) return undefined;
    // a peek that finds nothing is followed by a get, which counts the miss
    if (this.options.stats) this.options.stats.hits++;
    return slot.rules;
  }

  /** Forgets (org, channel), or every channel of the org for `"*"` (a global rule changed); the next get reloads. */
  invalidate(org: string, channel: string): void {
    const stats = this.options.stats;
    if (stats) stats.invalidations[channel === "*" ? "org" : "channel"]++;
    if (channel === "*") {
      // a global write is rare: a scan is cheaper than an index kept on every send
      for (const slot of this.slots.values()) if (slot.org === org) this.expire(slot);
    } else {
      const slot = this.slots.get(keyOf(org, channel));
      if (slot) this.expire(slot);
    }
  }

  /** Forgets every key (e.g. after invalidation messages may have been missed). */
  invalidateAll(): void {
    if (this.options.stats) this.options.stats.invalidations.all++;
    for (const slot of this.slots.values()) this.expire(slot);
  }

  state(): RulesState {
    return this.current;
  }

  onStateChange(listener: (state: RulesState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private isFresh(slot: Slot, now: number): boolean {
    return slot.rules !== undefined && slot.valid && now - slot.loadedAt < this.ttlMs;
  }

  private expire(slot: Slot): void {
    slot.valid = false;
    slot.generation++;
    // the next get starts a load that sees the change, rather than joining one that may not
    slot.inflight = undefined;
  }

  private slot(org: string, channel: string): Slot {
    const key = keyOf(org, channel);
    let slot = this.slots.get(key);
    if (!slot) {
      if (this.slots.size >= this.maxKeys) {
        const oldest = this.slots.keys().next().value;
        if (oldest !== undefined) this.slots.delete(oldest); // a load still running for it lands in the dropped slot
      }
      slot = {
        org,
        rules: undefined, loadedAt: 0, valid: false, attemptedAt: Number.NEGATIVE_INFINITY,
        lastError: undefined, inflight: undefined, generation: 0,
      };
      this.slots.set(key, slot);
    }
    return slot;
  }

  private refresh(org: string, channel: string, slot: Slot): Promise<readonly CapRule[]> {
    if (slot.inflight) return slot.inflight;
    const generation = slot.generation;
    slot.attemptedAt = this.now();
    const loading: Promise<readonly CapRule[]> = this.options.load(org, channel).then(
      (rules) => {
        if (slot.inflight === loading) slot.inflight = undefined;
        if (slot.generation === generation) {
          slot.rules = rules;
          slot.loadedAt = this.now();
          slot.valid = true;
        } else if (slot.rules === undefined) {
          slot.rules = rules; // a fallback only: it may predate the change that invalidated it
        }
        this.setState("ok");
        return rules;
      },
      (err: unknown) => {
        if (slot.inflight === loading) slot.inflight = undefined;
        slot.lastError = err;
        this.setState("stale", err);
        if (slot.rules) return slot.rules;
        throw this.unavailable(org, channel, err);
      },
    );
    slot.inflight = loading;
    return loading;
  }

  private unavailable(org: string, channel: string, cause: unknown): RulesUnavailableError {
    return new RulesUnavailableError(
      `frequency cap rules for org "${org}", channel "${channel}" could not be loaded and none were loaded before: ${message(cause)}`,
      cause,
    );
  }

  private setState(next: RulesState, cause?: unknown): void {
    if (next === this.current) return;
    this.current = next;
    this.options.warn(next === "stale"
      ? `frequency cap rules could not be loaded (${message(cause)}): the last rules loaded keep serving until the database answers again`
      : "frequency cap rules load again: the database is back");
    for (const listener of this.listeners) listener(next);
  }
}
