import type { HistoryAppend } from "../store/admissionStore";

/**
 * Recipients whose history a memory store keeps: those written last. Each
 * holds at most the cap-config's history size of short entries, so this
 * bounds the history's heap however many recipients send.
 */
export const MEMORY_HISTORY_RECIPIENTS = 20_000;

interface HistoryList {
  entries: string[];
  expiresAt: number;
}

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
      let list = this.current.get(key);
      if (!list) {
        list = this.older.get(key);
        if (list) this.older.delete(key);
        else list = { entries: [], expiresAt: 0 };
        this.current.set(key, list);
        if (this.current.size >= this.generation) {
          this.older = this.current;
          this.current = new Map();
        }
      }
      if (list.expiresAt <= now) list.entries = [];
      list.entries.push(entry);
      if (list.entries.length > keep) list.entries.splice(0, list.entries.length - keep);
      list.expiresAt = now + ttlMs;
      return 1;
    });
  }

  read(key: string, keep: number): string[] {
    const list = this.current.get(key) ?? this.older.get(key);
    if (!list || list.expiresAt <= this.clock()) return [];
    return list.entries.slice(-keep);
  }

  sweep(now: number): void {
    for (const generation of [this.current, this.older]) {
      for (const [key, list] of generation) if (list.expiresAt <= now) generation.delete(key);
    }
  }
}
