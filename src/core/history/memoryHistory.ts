import type { HistoryAppend } from "../store/admissionStore";
import { dropExpired } from "../store/sweepParts";

/**
 * Recipients whose history a memory store keeps: those written last. Each
 * holds at most the cap-config's history size of short entries, so this
 * bounds the history's heap however many recipients send.
 */
export const MEMORY_HISTORY_RECIPIENTS = 20_000;

/**
 * One recipient's entries, oldest first, in one array: when it expires, then
 * per entry its time and text. An allowed claim's entry is its time and the
 * text after it, which a gate's claims on the same caps share
 * (ClaimHistory.after), so a claim adds a number and a reference and makes no
 * string; any other entry is its whole text, its time NaN. One array and
 * no object or string per entry, however many recipients a burst reaches.
 */
type HistoryList = (number | string)[];
const EXPIRES_AT = 0;

/**
 * A memory store's decision histories, bounded by recipient: two
 * generations, the recipients written since the last turn and those before
 * it; a generation that reaches half the bound becomes the older one and the
 * older one goes. So the histories written last are kept, with no eviction
 * scan per write.
 */
export class MemoryHistory {
  private current = new Map<string, HistoryList>();
  private older = new Map<string, HistoryList>();
  private readonly generation: number;

  constructor(private readonly clock: () => number, maxRecipients = MEMORY_HISTORY_RECIPIENTS) {
    this.generation = Math.max(1, Math.floor(maxRecipients / 2));
  }

  append(appends: readonly HistoryAppend[], keep: number, ttlMs: number): number[] {
    const now = this.clock();
    return appends.map(({ key, entry }) => {
      this.add(key, Number.NaN, entry, keep, ttlMs, now);
      return 1;
    });
  }

  /** Adds an allowed claim's entry to `key`'s history: its time `at` (the claim's clock) and the text after it. */
  addClaimed(key: string, at: number, after: string, keep: number, ttlMs: number): void {
    this.add(key, at, after, keep, ttlMs, at);
  }

  read(key: string, keep: number): string[] {
    const list = this.current.get(key) ?? this.older.get(key);
    if (!list || (list[EXPIRES_AT] as number) <= this.clock()) return [];
    const entries: string[] = [];
    for (let i = Math.max(1, list.length - 2 * keep); i < list.length; i += 2) {
      const at = list[i] as number;
      const text = list[i + 1] as string;
      entries.push(Number.isNaN(at) ? text : `${at.toString(16)}${text}`);
    }
    return entries;
  }

  /** Drops expired histories, `slice` recipients at a time (src/core/store/sweepParts.ts). */
  *sweepParts(slice: number): Generator<void, void, undefined> {
    for (const generation of [this.current, this.older]) {
      yield* dropExpired(generation, (list, now) => (list[EXPIRES_AT] as number) <= now, this.clock, slice);
    }
  }

  private add(key: string, at: number, text: string, keep: number, ttlMs: number, now: number): void {
    let list = this.current.get(key);
    if (!list) {
      list = this.older.get(key);
      if (list === undefined) {
        this.enter(key, [now + ttlMs, at, text]);
        return;
      }
      this.older.delete(key);
      this.enter(key, list);
    }
    if ((list[EXPIRES_AT] as number) <= now) list.length = 1;
    list.push(at, text);
    const over = list.length - 1 - 2 * keep;
    if (over > 0) list.splice(1, over);
    list[EXPIRES_AT] = now + ttlMs;
  }

  private enter(key: string, list: HistoryList): void {
    this.current.set(key, list);
    if (this.current.size >= this.generation) {
      this.older = this.current;
      this.current = new Map();
    }
  }
}
