import { capCounterKey } from "../caps/keys";
import { StoreUnavailableError } from "../errors";
import type { CapRule } from "../rules/rules";
import type { AdmissionStore, HistoryAppend } from "../store/admissionStore";
import { decodeEntry, type HistoryEntry } from "./historyEntry";

/**
 * Entries kept per recipient when the cap-config does not say: none. Writing
 * a verdict beside every claim costs a burst more than a default should
 * (docs/benchmark.md, the -hist10 rows); a flow author who wants it names a size.
 */
export const DEFAULT_HISTORY_SIZE = 0;
/** Most entries a cap-config may keep per recipient: a recipient's list is read whole. */
export const MAX_HISTORY_SIZE = 100;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** A history outlives its recipient's longest window, and at least a day: "why not yesterday?" is the usual question. */
export const MIN_HISTORY_TTL_MS = DAY_MS;
/** A lifetime cap never expires, its history does: bounded keys. */
export const MAX_HISTORY_TTL_MS = 31 * DAY_MS;

/** How long a rule's counts matter: its window (a calendar period's longest length). */
export function ruleSpanMs(rule: Pick<CapRule, "window_type" | "window_seconds">): number {
  switch (rule.window_type) {
    case "calendar_day": return DAY_MS + 14 * HOUR_MS;
    case "calendar_week": return 7 * DAY_MS + 14 * HOUR_MS;
    case "lifetime": return MAX_HISTORY_TTL_MS;
    default: return rule.window_seconds * 1000;
  }
}

export interface DecisionHistoryOptions {
  keyPrefix: string;
  /** entries kept per recipient; 0 keeps none (and costs nothing) */
  size: number;
  /** how often noted entries are written, ms */
  flushMs?: number;
  /** most entries waiting to be written: past it new ones are dropped (and counted), so a store that is down costs bounded memory */
  maxPending?: number;
  /** told once per failed write, with how many entries it lost */
  onLost?: (entries: number, err: Error) => void;
}

/** lists one write holds when the store does not say (a Redis Cluster's batches are smaller: one call per slot) */
const WRITE_CHUNK = 256;

/**
 * A cap-config's decision history: the last `size` verdicts of each
 * recipient (src/core/history/verdictEntry.ts), keyed as the store keys the
 * recipient, so under hashRecipients by its HMAC. Gates note verdicts as they
 * make them; the entries are written a moment later, a recipient's several
 * in one list write and many recipients in one store call, off the msg's
 * path: a msg never waits for its history, and a history write that fails
 * costs that history, never a msg.
 */
export class DecisionHistory {
  /** what was noted and waits to be written, in order */
  private pending: HistoryAppend[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** the write under way, and the flush that follows it (what was noted meanwhile) */
  private inFlight: Promise<void> | undefined;
  private again: Promise<void> | undefined;
  /** the history's lifetime: the longest window of the rules seen, within the bounds */
  private ttlMs = MIN_HISTORY_TTL_MS;
  private readonly seenRules = new WeakSet<readonly CapRule[]>();
  /** entries not kept: dropped while too many waited, or lost with a failed write */
  dropped = 0;
  written = 0;
  private readonly flushMs: number;
  private readonly maxPending: number;
  private tooMany: Error | undefined;
  private readonly chunk: number;

  constructor(private readonly store: Pick<AdmissionStore, "appendHistory" | "readHistory" | "batching">, private readonly options: DecisionHistoryOptions) {
    this.flushMs = options.flushMs ?? 100;
    this.maxPending = options.maxPending ?? 50_000;
    // one store batch at a time: the history never has more calls in flight than one of the send path's batches
    this.chunk = store.batching?.maxBatch ?? WRITE_CHUNK;
  }

  get size(): number {
    return this.options.size;
  }

  get enabled(): boolean {
    return this.options.size > 0;
  }

  get lifetimeMs(): number {
    return this.ttlMs;
  }

  /** Rules a send was judged by: the history lives as long as the longest of their windows. */
  sawRules(rules: readonly CapRule[]): void {
    if (this.seenRules.has(rules)) return;
    this.seenRules.add(rules);
    for (const rule of rules) {
      const span = Math.min(ruleSpanMs(rule), MAX_HISTORY_TTL_MS);
      if (span > this.ttlMs) this.ttlMs = span;
    }
  }

  /** Notes one verdict (an encoded entry, historyEntry.ts) for the recipient (`recipientToken`, as the store keys it) of `org`. */
  note(org: string, recipientToken: string, entry: string): void {
    if (!this.enabled) return;
    if (this.pending.length >= this.maxPending) {
      this.lost(1, this.tooMany ??= new Error(`more than ${this.maxPending} verdicts waiting to be written`));
      return;
    }
    // the history is kept in the recipient's counter hash (lua/lib/counter_entries.lua historyWrites)
    this.pending.push({ key: capCounterKey(this.options.keyPrefix, org, recipientToken), entry });
    if (this.timer === undefined) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** A recipient's history, newest first: what was noted and not yet written too. */
  async read(org: string, recipientToken: string): Promise<HistoryEntry[]> {
    await this.flush();
    const texts = await this.store.readHistory(capCounterKey(this.options.keyPrefix, org, recipientToken), this.options.size);
    const entries: HistoryEntry[] = [];
    for (let i = texts.length - 1; i >= 0; i--) {
      const entry = decodeEntry(texts[i]);
      if (entry) entries.push(entry);
    }
    // written as msgs leave, so a refusal that first gave back earlier claims lands after a later msg's verdict
    return entries.sort((a, b) => b.at - a.at);
  }

  /**
   * Writes what was noted so far; resolves once it is written. One write at a
   * time: what is noted meanwhile waits in `pending` (bounded by maxPending)
   * for the next, so a slow store costs dropped entries, never a growing heap.
   */
  flush(): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.inFlight) {
      this.again ??= this.inFlight.then(() => {
        this.again = undefined;
        return this.flush();
      });
      return this.again;
    }
    if (this.pending.length === 0) return Promise.resolve();
    const batch = this.pending;
    this.pending = [];
    const writing = this.write(batch).finally(() => {
      this.inFlight = undefined;
    });
    this.inFlight = writing;
    return writing;
  }

  private async write(batch: readonly HistoryAppend[]): Promise<void> {
    for (let from = 0; from < batch.length; from += this.chunk) {
      const chunk = batch.slice(from, from + this.chunk);
      try {
        const answers = await this.store.appendHistory(chunk, this.options.size, this.ttlMs);
        for (const answer of answers) {
          if (answer instanceof StoreUnavailableError) this.lost(1, answer);
          else this.written++;
        }
      } catch (err) {
        this.lost(chunk.length, err as Error);
      }
    }
  }

  private lost(entries: number, err: Error): void {
    this.dropped += entries;
    this.options.onLost?.(entries, err);
  }

  /** The last entries noted are written before the store closes. */
  close(): Promise<void> {
    return this.flush();
  }
}
