import {
  checkTakeArgs, mergedItems, prepareDeferral, withMerged,
  type DeferInput, type DeferQueue, type DeferResult, type DeferredMsg,
} from "./deferQueue";

export type DeferClock = () => number;

interface Held {
  /** the DeferredMsg as JSON, so the caller's later changes never reach the queue (as in Redis) */
  json: string;
  /** min(dueAt, expiresAt), floored to ms */
  releaseAt: number;
  /** JSON of msgs collapsed into it while held */
  merged: string[];
  /** its collapse key while it is held and not taken */
  collapseKey?: string;
  /** set while taken and not acked */
  leaseUntil?: number;
}

/** A memory defer queue as JSON: what the cap-config saves on close and loads on start. */
export interface DeferSnapshot {
  version: 1;
  /** every msg held, due or leased (a leased one comes back as due) */
  entries: { entry: DeferredMsg; merged: Record<string, unknown>[]; collapseKey?: string }[];
}

/** ascending by (releaseAt, id), the order a Redis sorted set keeps */
function before(a: { releaseAt: number; id: string }, b: { releaseAt: number; id: string }): boolean {
  return a.releaseAt < b.releaseAt || (a.releaseAt === b.releaseAt && a.id < b.id);
}

/**
 * The defer queue of a cap-config on the memory store (SPEC §6): the same
 * semantics as RedisDeferQueue in one process. JavaScript runs each call to
 * completion before the next, so every call is atomic without locks.
 */
export class MemoryDeferQueue implements DeferQueue {
  private readonly held = new Map<string, Held>();
  /** the due (not leased) msgs, ascending by (releaseAt, id) */
  private due: { releaseAt: number; id: string }[] = [];
  private readonly leased = new Set<string>();
  private readonly collapse = new Map<string, string>();

  private closed = false;

  constructor(private readonly clock: DeferClock = Date.now) {}

  async defer(entry: DeferInput, collapseKey?: string): Promise<DeferResult> {
    // after close the cap-config has saved the queue: a msg accepted now would be lost
    if (this.closed) throw new Error("defer queue is closed");
    const { id, releaseAt, stored } = prepareDeferral(entry);
    const key = collapseKey ?? "";
    if (key !== "") {
      const target = this.collapse.get(key);
      const into = target === undefined ? undefined : this.held.get(target);
      if (target !== undefined && target !== id && into && into.leaseUntil === undefined) {
        for (const m of mergedItems(entry)) into.merged.push(JSON.stringify(m));
        return { id: target, collapsedInto: target };
      }
    }
    const old = this.held.get(id);
    if (old) {
      if (old.collapseKey !== undefined && old.collapseKey !== key && this.collapse.get(old.collapseKey) === id) this.collapse.delete(old.collapseKey);
      this.unlist(id, old);
    }
    const record: Held = { json: JSON.stringify(stored), releaseAt, merged: [] };
    if (key !== "") {
      record.collapseKey = key;
      this.collapse.set(key, id);
    }
    this.held.set(id, record);
    this.list(id, releaseAt);
    return { id };
  }

  async takeDue(limit: number, leaseMs: number): Promise<DeferredMsg[]> {
    checkTakeArgs(limit, leaseMs);
    const now = Math.floor(this.clock());
    for (const id of [...this.leased]) {
      const record = this.held.get(id) as Held;
      if ((record.leaseUntil as number) <= now) {
        this.leased.delete(id);
        delete record.leaseUntil;
        this.list(id, record.releaseAt);
      }
    }
    let n = 0;
    while (n < this.due.length && n < limit && (this.due[n] as { releaseAt: number }).releaseAt <= now) n++;
    const taken = this.due.splice(0, n);
    return taken.map(({ id }) => {
      const record = this.held.get(id) as Held;
      record.leaseUntil = now + Math.ceil(leaseMs);
      this.leased.add(id);
      if (record.collapseKey !== undefined) {
        if (this.collapse.get(record.collapseKey) === id) this.collapse.delete(record.collapseKey);
        delete record.collapseKey;
      }
      return withMerged(JSON.parse(record.json) as DeferredMsg, record.merged.map((m) => JSON.parse(m) as Record<string, unknown>));
    });
  }

  async ack(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      if (this.leased.delete(id)) this.held.delete(id);
    }
  }

  async size(): Promise<number> {
    return this.held.size;
  }

  async nextDueAt(): Promise<number | null> {
    let next = this.due.length > 0 ? (this.due[0] as { releaseAt: number }).releaseAt : null;
    for (const id of this.leased) {
      const until = this.held.get(id)?.leaseUntil as number;
      if (next === null || until < next) next = until;
    }
    return next;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** Everything held, leased msgs as due again (their instance is going away). */
  snapshot(): DeferSnapshot {
    const entries: DeferSnapshot["entries"] = [];
    for (const record of this.held.values()) {
      const item: DeferSnapshot["entries"][number] = {
        entry: JSON.parse(record.json) as DeferredMsg,
        merged: record.merged.map((m) => JSON.parse(m) as Record<string, unknown>),
      };
      if (record.collapseKey !== undefined) item.collapseKey = record.collapseKey;
      entries.push(item);
    }
    return { version: 1, entries };
  }

  /** Adds a snapshot's msgs (each replaces a held msg with the same id). */
  restore(snapshot: DeferSnapshot): void {
    if (snapshot.version !== 1) throw new Error(`unknown defer queue snapshot version ${String(snapshot.version)}`);
    for (const { entry, merged, collapseKey } of snapshot.entries) {
      const { id, releaseAt, stored } = prepareDeferral(entry);
      const old = this.held.get(id);
      if (old) this.unlist(id, old);
      const record: Held = { json: JSON.stringify(stored), releaseAt, merged: merged.map((m) => JSON.stringify(m)) };
      if (collapseKey !== undefined) {
        record.collapseKey = collapseKey;
        this.collapse.set(collapseKey, id);
      }
      this.held.set(id, record);
      this.list(id, releaseAt);
    }
  }

  private list(id: string, releaseAt: number): void {
    this.due.splice(this.position({ releaseAt, id }), 0, { releaseAt, id });
  }

  /** Takes a held msg out of the due list or the lease set, wherever it is. */
  private unlist(id: string, record: Held): void {
    if (this.leased.delete(id)) return;
    const i = this.position({ releaseAt: record.releaseAt, id });
    if (this.due[i]?.id === id) this.due.splice(i, 1);
  }

  /** where (releaseAt, id) sits, or would sit, in the due list (binary search) */
  private position(item: { releaseAt: number; id: string }): number {
    let lo = 0;
    let hi = this.due.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (before(this.due[mid] as typeof item, item)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
