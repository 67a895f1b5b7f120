import { MinHeap } from "../minHeap";
import { plainCodec, type DeferCodec } from "./codec";
import {
  asError, checkLeaseUntil, heldJson, checkLimit, checkScanLimit, checkTag, checkTakeArgs, dropAt, MAX_MERGED, mergedItems, prepareDeferral, withMerged,
  type DeferItem, type DeferQueue, type DeferResult, type DeferredMsg, type HeldScan,
} from "./heldQueue";

export type DeferClock = () => number;

/**
 * One change to a memory queue, as its journal records it: replaying the
 * changes in order rebuilds what is held (leases are not recorded: after a
 * restart a msg taken and not acked is due again).
 */
export type QueueChange =
  /** held anew, or replacing the held msg with that id (keepMerged: a retried hold keeps what was merged into it) */
  | { op: "put"; id: string; stored: string; releaseAt: number; expiresAt?: number; key?: string; tag?: string; keepMerged: boolean }
  /**
   * `items` of entry `unit` merged into `into`, then the oldest past MAX_MERGED
   * dropped; `until`: the entry's own drop time (null: none), which the group
   * keeps if later than its own (absent in journals written before it was kept)
   */
  | { op: "merge"; into: string; unit: string; items: string[]; dropped: number; until?: number | null }
  /** released (acked) or dropped for good */
  | { op: "remove"; ids: string[] }
  /** a whole held msg, as a compacted journal writes it */
  | { op: "state"; id: string; stored: string; releaseAt: number; expiresAt?: number; key?: string; tag?: string; merged: string[]; units: string[]; dropped: number };

/** A held msg as a journal's state line has it (a field left undefined is not written). */
export interface HeldState {
  g: string | undefined;
  op: "state";
  id: string;
  stored: string;
  releaseAt: number;
  expiresAt: number | undefined;
  key: string | undefined;
  tag: string | undefined;
  merged: readonly string[];
  units: readonly string[];
  dropped: number;
}

const NO_UNITS: readonly string[] = Object.freeze([]);

export interface MemoryDeferQueueOptions {
  /** the gate whose msgs it holds; entries of another gate are refused */
  gate?: string;
  clock?: DeferClock;
  codec?: DeferCodec;
  /** told the changes of each call (a batch at once), synchronously, before the call returns */
  onChanges?: (changes: QueueChange[]) => void;
  /** a held msg that cannot be read back (codec, damaged): it is removed */
  onDamaged?: (id: string, err: Error) => void;
}

interface Held {
  /** the DeferredMsg as encoded JSON, so the caller's later changes never reach the queue (as in Redis) */
  stored: string;
  /** min(dueAt, expiresAt), floored to ms */
  releaseAt: number;
  /** min(expiresAt, deadline): past it dropExpired removes it */
  expiresAt?: number;
  /** encoded JSON of msgs merged into it while held, the newest MAX_MERGED */
  merged: string[];
  /** ids of the entries merged into it (a retried merge adds nothing) */
  units: Set<string>;
  /** merged msgs dropped past MAX_MERGED */
  dropped: number;
  /** its collapse key while it is held and not taken */
  collapseKey?: string;
  /** the tag it is filed under (takeTagged) */
  tag?: string;
  /** set while taken and not acked */
  leaseUntil?: number;
}

/** ascending by (releaseAt, id), the order a Redis sorted set keeps */
function before(a: { releaseAt: number; id: string }, b: { releaseAt: number; id: string }): boolean {
  return a.releaseAt < b.releaseAt || (a.releaseAt === b.releaseAt && a.id < b.id);
}

/**
 * A gate's defer queue on the memory store (SPEC §6): the same semantics as
 * RedisDeferQueue in one process. JavaScript runs each call to completion
 * before the next, so every call is atomic without locks; each change is
 * handed to `onChange` (the journal) before the call returns.
 */
export class MemoryDeferQueue implements DeferQueue {
  private readonly held = new Map<string, Held>();
  /** the due (not leased) msgs, ascending by (releaseAt, id) */
  private due: { releaseAt: number; id: string }[] = [];
  private readonly leased = new Set<string>();
  /**
   * the leases by expiry, so a take looks only at the expired ones (a paced
   * gate holds thousands leased); entries of leases since acked or retaken
   * are stale and skipped, and dropped once they outnumber the live ones
   */
  private readonly leaseOrder = new MinHeap<{ until: number; id: string }>((a, b) => a.until < b.until);
  private readonly collapse = new Map<string, string>();
  /** tag -> ids filed under it */
  private readonly tags = new Map<string, Set<string>>();
  private readonly clock: DeferClock;
  private readonly codec: DeferCodec;
  private closed = false;
  /** changes made by the call in progress, told at its end */
  private pending: QueueChange[] = [];

  constructor(private readonly options: MemoryDeferQueueOptions = {}) {
    this.clock = options.clock ?? Date.now;
    this.codec = options.codec ?? plainCodec;
  }

  async defer(entry: DeferItem["entry"], collapseKey?: string): Promise<DeferResult> {
    const [result] = await this.deferMany([{ entry, ...(collapseKey !== undefined ? { collapseKey } : {}) }]);
    if (result instanceof Error) throw result;
    return result;
  }

  async deferMany(items: readonly DeferItem[]): Promise<(DeferResult | Error)[]> {
    // after close the queue was compacted to disk: a msg accepted now would be lost
    if (this.closed) throw new Error("defer queue is closed");
    const results = items.map((item) => {
      try {
        return this.deferOne(item);
      } catch (err) {
        return asError(err);
      }
    });
    this.flush();
    return results;
  }

  async takeDue(limit: number, leaseMs: number): Promise<DeferredMsg[]> {
    checkTakeArgs(limit, leaseMs);
    const now = Math.floor(this.clock());
    for (let next = this.leaseOrder.peek(); next !== undefined && next.until <= now; next = this.leaseOrder.peek()) {
      this.leaseOrder.pop();
      if (!this.isLease(next)) continue;
      const record = this.held.get(next.id) as Held;
      this.leased.delete(next.id);
      delete record.leaseUntil;
      this.list(next.id, record.releaseAt);
    }
    let n = 0;
    while (n < this.due.length && n < limit && (this.due[n] as { releaseAt: number }).releaseAt <= now) n++;
    const taken = this.due.splice(0, n);
    const out: DeferredMsg[] = [];
    const damaged: string[] = [];
    for (const { id } of taken) this.lease(id, this.held.get(id) as Held, now + Math.ceil(leaseMs), out, damaged);
    if (damaged.length > 0) this.change({ op: "remove", ids: damaged });
    this.flush();
    return out;
  }

  /** Hands a held msg out until `until` (no longer a collapse target); one that cannot be read goes to `damaged`. */
  private lease(id: string, record: Held, until: number, out: DeferredMsg[], damaged: string[]): void {
    this.leaseUntil(id, record, until);
    if (record.collapseKey !== undefined) {
      if (this.collapse.get(record.collapseKey) === id) this.collapse.delete(record.collapseKey);
      delete record.collapseKey;
    }
    const msg = this.read(id, record);
    if (msg) out.push(msg);
    else damaged.push(id);
  }

  async takeTagged(tag: string, limit: number, leaseMs: number): Promise<DeferredMsg[]> {
    checkTakeArgs(limit, leaseMs);
    const now = Math.floor(this.clock());
    const out: DeferredMsg[] = [];
    const damaged: string[] = [];
    for (const id of [...(this.tags.get(checkTag(tag)) ?? [])]) {
      if (out.length + damaged.length >= limit) break;
      const record = this.held.get(id);
      if (!record || record.leaseUntil !== undefined) continue;
      this.unlist(id, record);
      this.lease(id, record, now + Math.ceil(leaseMs), out, damaged);
    }
    if (damaged.length > 0) this.change({ op: "remove", ids: damaged });
    this.flush();
    return out;
  }

  async ack(ids: readonly string[]): Promise<void> {
    const removed = ids.filter((id) => this.leased.has(id));
    if (removed.length > 0) this.change({ op: "remove", ids: removed });
    this.flush();
  }

  async dropExpired(limit: number): Promise<DeferredMsg[]> {
    checkLimit(limit);
    const now = Math.floor(this.clock());
    const gone: string[] = [];
    const out: DeferredMsg[] = [];
    for (const [id, record] of this.held) {
      if (gone.length >= limit) break;
      if (record.leaseUntil !== undefined || record.expiresAt === undefined || record.expiresAt > now) continue;
      gone.push(id);
      const msg = this.read(id, record);
      if (msg) out.push(msg);
    }
    if (gone.length > 0) this.change({ op: "remove", ids: gone });
    this.flush();
    return out;
  }

  async scan(limit: number): Promise<HeldScan> {
    checkScanLimit(limit);
    const msgs: DeferredMsg[] = [];
    let scanned = 0;
    for (const record of this.held.values()) {
      if (scanned >= limit) return { msgs, scanned, complete: false };
      scanned++;
      try {
        msgs.push(JSON.parse(this.codec.decode(record.stored)) as DeferredMsg);
      } catch {
        // damaged: a take reports and removes it
      }
    }
    return { msgs, scanned, complete: true };
  }

  async size(): Promise<number> {
    return this.held.size;
  }

  /** msgs held right now (for the cap-config, without a promise) */
  get count(): number {
    return this.held.size;
  }

  async nextDueAt(): Promise<number | null> {
    const due = this.due.length > 0 ? (this.due[0] as { releaseAt: number }).releaseAt : null;
    let lease = this.leaseOrder.peek();
    while (lease !== undefined && !this.isLease(lease)) {
      this.leaseOrder.pop();
      lease = this.leaseOrder.peek();
    }
    if (lease === undefined) return due;
    return due === null ? lease.until : Math.min(due, lease.until);
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** Everything held as changes that rebuild it (what a compacted journal holds); leased msgs come back due. */
  state(): QueueChange[] {
    const lines: QueueChange[] = [];
    for (const held of this.states(this.held.size)) {
      const line: QueueChange & { op: "state" } = { op: "state", id: held.id, stored: held.stored, releaseAt: held.releaseAt, merged: [...held.merged], units: [...held.units], dropped: held.dropped };
      if (held.expiresAt !== undefined) line.expiresAt = held.expiresAt;
      if (held.key !== undefined) line.key = held.key;
      if (held.tag !== undefined) line.tag = held.tag;
      lines.push(line);
    }
    return lines;
  }

  /**
   * The first `limit` held msgs in the queue's order (the order their ids
   * were held in, a msg held again after it went counting as new), each as a
   * line named by `gate` (a journal's lines name it), made as they are asked
   * for: a compaction while the queues run asks for a part per turn of the
   * loop. A line shares the msg's lists and is read before the queue changes
   * again (a compaction writes each line as it is made): a compaction makes
   * one for every held msg, so each is one object of one shape, and only a
   * msg's merged units (a Set) are made an array, when it has any.
   */
  *states(limit: number, gate?: string): Generator<HeldState, void, undefined> {
    let made = 0;
    for (const [id, r] of this.held) {
      if (made++ >= limit) return;
      yield {
        g: gate, op: "state", id, stored: r.stored, releaseAt: r.releaseAt, expiresAt: r.expiresAt, key: r.collapseKey, tag: r.tag,
        merged: r.merged, units: r.units.size === 0 ? NO_UNITS : [...r.units], dropped: r.dropped,
      };
    }
  }

  /** Applies a recorded change (replaying the journal); live calls go through here too, so both agree. */
  apply(change: QueueChange): void {
    switch (change.op) {
      case "put": {
        const old = this.held.get(change.id);
        const keep = change.keepMerged && old !== undefined;
        if (old) {
          if (old.collapseKey !== undefined && old.collapseKey !== change.key && this.collapse.get(old.collapseKey) === change.id) this.collapse.delete(old.collapseKey);
          this.unlist(change.id, old);
        }
        this.hold(change.id, {
          stored: change.stored, releaseAt: change.releaseAt,
          ...(change.expiresAt !== undefined ? { expiresAt: change.expiresAt } : {}),
          merged: keep ? old.merged : [], units: keep ? old.units : new Set(), dropped: keep ? old.dropped : 0,
          ...(change.tag !== undefined ? { tag: change.tag } : {}),
        }, change.key);
        return;
      }
      case "state": {
        const old = this.held.get(change.id);
        if (old) this.unlist(change.id, old);
        this.hold(change.id, {
          stored: change.stored, releaseAt: change.releaseAt,
          ...(change.expiresAt !== undefined ? { expiresAt: change.expiresAt } : {}),
          merged: [...change.merged], units: new Set(change.units), dropped: change.dropped,
          ...(change.tag !== undefined ? { tag: change.tag } : {}),
        }, change.key);
        return;
      }
      case "merge": {
        const into = this.held.get(change.into);
        if (!into || into.units.has(change.unit)) return;
        into.units.add(change.unit);
        into.merged.push(...change.items);
        const over = into.merged.length - MAX_MERGED;
        if (over > 0) into.merged.splice(0, over);
        into.dropped += Math.max(0, over) + change.dropped;
        // the group is kept while any msg in it may still be released (gone with the head's own expiry, it lost them all)
        if (change.until === null) delete into.expiresAt;
        else if (change.until !== undefined && into.expiresAt !== undefined) into.expiresAt = Math.max(into.expiresAt, change.until);
        return;
      }
      case "remove":
        for (const id of change.ids) {
          const record = this.held.get(id);
          if (!record) continue;
          this.unlist(id, record);
          if (record.collapseKey !== undefined && this.collapse.get(record.collapseKey) === id) this.collapse.delete(record.collapseKey);
          this.untag(id, record);
          this.held.delete(id);
        }
    }
  }

  private untag(id: string, record: Held): void {
    if (record.tag === undefined) return;
    const ids = this.tags.get(record.tag);
    ids?.delete(id);
    if (ids?.size === 0) this.tags.delete(record.tag);
  }

  private deferOne(item: DeferItem): DeferResult {
    const { entry, collapseKey, tag } = item;
    const gate = this.options.gate;
    if (gate !== undefined && entry?.gate !== gate) throw new TypeError(`defer: gate ${JSON.stringify(entry?.gate)} does not hold its msgs in the queue of gate ${gate}`);
    const leaseUntil = checkLeaseUntil(item);
    const { id, releaseAt, stored } = prepareDeferral(entry);
    const key = collapseKey ?? "";
    if (key !== "") {
      const target = this.collapse.get(key);
      const into = target === undefined ? undefined : this.held.get(target);
      if (target !== undefined && target !== id && into && into.leaseUntil === undefined) {
        const items = mergedItems(entry).map((m) => this.codec.encode(heldJson(m)));
        this.change({ op: "merge", into: target, unit: id, items, dropped: entry.collapsedDropped ?? 0, until: dropAt(entry) ?? null });
        return { id: target, collapsedInto: target };
      }
    }
    const old = this.held.get(id);
    const dropAfter = dropAt(entry);
    this.change({
      op: "put", id, stored: this.codec.encode(heldJson(stored)), releaseAt,
      ...(dropAfter !== undefined ? { expiresAt: dropAfter } : {}),
      ...(key !== "" ? { key } : {}),
      ...(tag !== undefined ? { tag: checkTag(tag) } : {}),
      // held and not taken: a retried hold of the same msg; taken: a new deferral of a released msg
      keepMerged: old !== undefined && old.leaseUntil === undefined,
    });
    // the journal records the put alone: after a restart the msg is due again, as a taken one is
    if (leaseUntil !== undefined) {
      const record = this.held.get(id) as Held;
      this.unlist(id, record);
      this.leaseUntil(id, record, leaseUntil);
    }
    return { id };
  }

  private change(change: QueueChange): void {
    this.apply(change);
    this.pending.push(change);
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    const changes = this.pending;
    this.pending = [];
    this.options.onChanges?.(changes);
  }

  private hold(id: string, record: Held, key: string | undefined): void {
    const old = this.held.get(id);
    if (old) this.untag(id, old);
    if (record.tag !== undefined) {
      let ids = this.tags.get(record.tag);
      if (!ids) this.tags.set(record.tag, (ids = new Set()));
      ids.add(id);
    }
    if (key !== undefined && key !== "") {
      record.collapseKey = key;
      this.collapse.set(key, id);
    }
    this.held.set(id, record);
    this.list(id, record.releaseAt);
  }

  /** Leases a held msg (taken, or held leased) until `until`. */
  private leaseUntil(id: string, record: Held, until: number): void {
    record.leaseUntil = until;
    this.leased.add(id);
    if (this.leaseOrder.size > 2 * this.leased.size + 1024) {
      const live = this.leaseOrder.values().filter((e) => this.isLease(e));
      this.leaseOrder.clear();
      for (const e of live) this.leaseOrder.push(e);
    }
    this.leaseOrder.push({ until, id });
  }

  /** whether a lease-order entry is the msg's current lease (not acked, dropped or taken anew since) */
  private isLease(entry: { until: number; id: string }): boolean {
    return this.leased.has(entry.id) && this.held.get(entry.id)?.leaseUntil === entry.until;
  }

  /** The held msg as handed out, or undefined (reported) when it cannot be read back. */
  private read(id: string, record: Held): DeferredMsg | undefined {
    try {
      const stored = JSON.parse(this.codec.decode(record.stored)) as DeferredMsg;
      const merged = record.merged.map((m) => JSON.parse(this.codec.decode(m)) as Record<string, unknown>);
      return withMerged(stored, merged, record.dropped);
    } catch (err) {
      this.options.onDamaged?.(id, asError(err));
      return undefined;
    }
  }

  private list(id: string, releaseAt: number): void {
    this.due.splice(this.position({ releaseAt, id }), 0, { releaseAt, id });
  }

  /** Takes a held msg out of the due list or the lease set, wherever it is. */
  private unlist(id: string, record: Held): void {
    if (this.leased.delete(id)) {
      delete record.leaseUntil;
      return;
    }
    const i = this.position({ releaseAt: record.releaseAt, id });
    if (this.due[i]?.id === id) this.due.splice(i, 1);
  }

  /** where (releaseAt, id) sits, or would sit, in the due list (binary search) */
  private position(item: { releaseAt: number; id: string }): number {
    let lo = 0;
    let hi = this.due.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (before(this.due[mid], item)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
