import type Redis from "ioredis";
import type { Cluster } from "ioredis";
import { encodeKeyPart } from "../core/caps/keys";
import { withScripts } from "./scripts";
import { retriedMidMove } from "../core/store/storeFaults";
import { plainCodec, type DeferCodec } from "../core/hold/codec";
import {
  asError, checkLeaseUntil, heldJson, checkLimit, checkScanLimit, checkTag, checkTakeArgs, dropAt, MAX_MERGED, mergedItems, prepareDeferral, withMerged,
  type DeferInput, type DeferItem, type DeferQueue, type DeferResult, type DeferredMsg, type HeldScan,
} from "../core/hold/heldQueue";

type RedisClient = Redis | Cluster;
type Reply = (string | null)[];
/** One msg held leased: id, release-at, stored msg, drop time ("" none), lease until. */
type LeasedArgs = [string, number, string, number | "", number];

/** The scripts this queue calls (defined by scripts.ts), with what they answer. */
interface DeferScripts {
  sendgateDeferPut(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<(string | number)[]>;
  sendgateDeferLease(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number>;
  sendgateDeferTake(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<[number, string[], Reply, string[][], Reply]>;
  sendgateDeferAck(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number>;
  sendgateDeferExpire(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<[string[], Reply, string[][], Reply]>;
  sendgateDeferTakeTagged(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<[number, string[], Reply, string[][], Reply]>;
}

/** A MULTI that can carry the defer scripts (ioredis adds defined commands to pipelines too). */
interface DeferMulti {
  sendgateDeferPut(numKeys: number, ...keysAndArgs: (string | number)[]): DeferMulti;
  sendgateDeferTag(numKeys: number, ...keysAndArgs: (string | number)[]): DeferMulti;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/** The keys of one gate's queue, in the order the lua/defer_*.lua scripts take them. */
export interface DeferKeys {
  /** what the per-msg keys (merged list, merged ids) start with */
  base: string;
  due: string;
  lease: string;
  msg: string;
  at: string;
  ck: string;
  collapse: string;
  exp: string;
  dropped: string;
}

/** Where a gate's queue lives: the cap-config's key prefix, its node id, the gate's node id. */
export interface DeferScope {
  keyPrefix: string;
  configId: string;
  gate: string;
}

/** Every defer key of a key prefix carries this hash tag: one Redis Cluster slot, shared with the layout before 0.2. */
export function deferHashTag(keyPrefix: string): string {
  return `{${keyPrefix}:dq}`;
}

export function checkDeferPrefix(keyPrefix: string): void {
  if (keyPrefix.length === 0 || /[{}]/.test(keyPrefix)) throw new Error("defer queue: keyPrefix must be non-empty and carry no { or }");
}

/**
 * `<prefix>:{<prefix>:dq}:q:<cap-config id>:<gate id>:<part>`: a queue per gate,
 * under the cap-config that owns it, so no poller ever takes a msg it has no
 * gate for (two cap-configs on one prefix, or a gate deployed nowhere). One
 * hash tag per prefix, so each script touches one Redis Cluster slot. The
 * recipients' tags (`{org|recipient}`) never contain `:`, so they cannot clash.
 */
export function deferKeys(scope: DeferScope): DeferKeys {
  checkDeferPrefix(scope.keyPrefix);
  const base = `${scope.keyPrefix}:${deferHashTag(scope.keyPrefix)}:q:${encodeKeyPart(scope.configId)}:${encodeKeyPart(scope.gate)}`;
  return {
    base,
    due: `${base}:due`,
    lease: `${base}:lease`,
    msg: `${base}:msg`,
    at: `${base}:at`,
    ck: `${base}:ck`,
    collapse: `${base}:collapse`,
    exp: `${base}:exp`,
    dropped: `${base}:dropped`,
  };
}

/** Most items one defer_put.lua call holds: a bigger batch is split, so one script never blocks Redis for long. */
export const PUT_SLICE = 1000;

/** Fields one HSCAN page of a scan asks for. */
const SCAN_PAGE = 1000;

export interface RedisDeferQueueOptions {
  codec?: DeferCodec;
  /** a held msg that cannot be read back (codec, damaged): it is acked (removed) and reported */
  onDamaged?: (id: string, err: Error) => void;
}

/**
 * The durable defer queue of one gate on Redis (SPEC §6). It uses the
 * cap-config's store client and does not own it: close() leaves it open.
 * Every instance running the gate shares the queue; each due msg is handed
 * out once, and a lease not acked in time comes back.
 */
export class RedisDeferQueue implements DeferQueue {
  readonly keys: DeferKeys;
  private readonly keyList: string[];
  private readonly codec: DeferCodec;
  private closed = false;

  constructor(private readonly client: RedisClient, readonly scope: DeferScope, private readonly options: RedisDeferQueueOptions = {}) {
    this.keys = deferKeys(scope);
    const k = this.keys;
    this.keyList = [k.due, k.lease, k.msg, k.at, k.ck, k.collapse, k.exp, k.dropped];
    this.codec = options.codec ?? plainCodec;
    withScripts(client);
  }

  async defer(entry: DeferInput, collapseKey?: string): Promise<DeferResult> {
    const [result] = await this.deferMany([{ entry, ...(collapseKey !== undefined ? { collapseKey } : {}) }]);
    if (result instanceof Error) throw result;
    return result;
  }

  async deferMany(items: readonly DeferItem[]): Promise<(DeferResult | Error)[]> {
    this.open();
    const results = new Array<DeferResult | Error>(items.length);
    const good: { index: number; args: (string | number)[]; tag?: string }[] = [];
    const leased: { index: number; args: LeasedArgs; tag?: string }[] = [];
    items.forEach((item, index) => {
      try {
        // held leased (and no collapseKey, which putArgs refuses with it): defer_lease.lua
        if (item.leaseUntil !== undefined && item.collapseKey === undefined) {
          leased.push({ index, args: this.leasedArgs(item), ...(item.tag !== undefined ? { tag: checkTag(item.tag) } : {}) });
        } else {
          good.push({ index, args: this.putArgs(item), ...(item.tag !== undefined ? { tag: checkTag(item.tag) } : {}) });
        }
      } catch (err) {
        results[index] = asError(err);
      }
    });
    // the two scripts run one after the other: an id held both ways in one batch takes the one path that keeps its order
    if (leased.length > 0 && good.length > 0) {
      const plain = new Set(good.map((g) => g.args[0]));
      if (leased.some((l) => plain.has(l.args[0]))) {
        for (const l of leased) good.push({ index: l.index, args: this.putArgs(items[l.index]), ...(l.tag !== undefined ? { tag: l.tag } : {}) });
        good.sort((a, b) => a.index - b.index);
        leased.length = 0;
      }
    }
    for (let from = 0; from < leased.length; from += PUT_SLICE) {
      const slice = leased.slice(from, from + PUT_SLICE);
      await this.slice(slice, results, async () => {
        await this.putLeased(slice);
        return slice.flatMap((s) => [s.args[0], 0]);
      });
    }
    for (let from = 0; from < good.length; from += PUT_SLICE) {
      const slice = good.slice(from, from + PUT_SLICE);
      await this.slice(slice, results, () => {
        const putArgs = [this.keyList.length, ...this.keyList, this.keys.base, MAX_MERGED, slice.length, ...slice.flatMap((s) => s.args)];
        const tagged = slice.filter((s) => s.tag !== undefined);
        return tagged.length === 0
          ? this.scripts.sendgateDeferPut(...(putArgs as [number, ...(string | number)[]]))
          : this.putTagged(putArgs as [number, ...(string | number)[]], tagged);
      });
    }
    return results;
  }

  /** Holds one slice of items in one call, and answers each: its id and whether it merged, or the store's failure. */
  private async slice(slice: readonly { index: number }[], results: (DeferResult | Error)[], put: () => Promise<(string | number)[]>): Promise<void> {
    try {
      // on a cluster, the queue's slot mid-move refuses the call (TRYAGAIN) until its keys are on one master again
      const reply = await retriedMidMove(put);
      slice.forEach(({ index }, i) => {
        const id = String(reply[2 * i]);
        results[index] = Number(reply[2 * i + 1]) === 1 ? { id, collapsedInto: id } : { id };
      });
    } catch (err) {
      // the store failed this slice: none of it was held (a script runs whole or not at all)
      for (const { index } of slice) results[index] = asError(err);
    }
  }

  /** Leased msgs and their tags, in one call of defer_lease.lua: atomic, so a held msg is never left out of its tag's index. */
  private async putLeased(slice: readonly { args: LeasedArgs; tag?: string }[]): Promise<void> {
    const tagKeys: string[] = [];
    const tagIndex = new Map<string, number>();
    const args: (string | number)[] = [];
    for (const { args: [id, releaseAt, stored, drop, leaseUntil], tag } of slice) {
      let index = 0;
      if (tag !== undefined) {
        index = tagIndex.get(tag) ?? 0;
        if (index === 0) {
          tagKeys.push(this.tagKey(tag));
          index = tagKeys.length;
          tagIndex.set(tag, index);
        }
      }
      args.push(id, releaseAt, stored, drop, leaseUntil, index);
    }
    const keys = [...this.keyList, ...tagKeys];
    await this.scripts.sendgateDeferLease(keys.length, ...keys, this.keys.base, slice.length, ...args);
  }

  async takeDue(limit: number, leaseMs: number): Promise<DeferredMsg[]> {
    this.open();
    checkTakeArgs(limit, leaseMs);
    const [, ids, msgs, merged, dropped] = await retriedMidMove(() => this.scripts.sendgateDeferTake(this.keyList.length, ...this.keyList, this.keys.base, limit, Math.ceil(leaseMs)));
    const { read, damaged } = this.readAll(ids, msgs, merged, dropped);
    // it can never be released: acked now, so it does not come back after every lease
    if (damaged.length > 0) await this.ack(damaged);
    return read;
  }

  async takeTagged(tag: string, limit: number, leaseMs: number): Promise<DeferredMsg[]> {
    this.open();
    checkTakeArgs(limit, leaseMs);
    const keys = [...this.keyList, this.tagKey(checkTag(tag))];
    const [, ids, msgs, merged, dropped] = await retriedMidMove(() => this.scripts.sendgateDeferTakeTagged(keys.length, ...keys, this.keys.base, limit, Math.ceil(leaseMs)));
    const { read, damaged } = this.readAll(ids, msgs, merged, dropped);
    if (damaged.length > 0) await this.ack(damaged);
    return read;
  }

  async ack(ids: readonly string[]): Promise<void> {
    this.open();
    if (ids.length === 0) return;
    // an ack refused mid-move and given up would let the released msgs come back after their lease, to go out twice
    await retriedMidMove(() => this.scripts.sendgateDeferAck(this.keyList.length, ...this.keyList, this.keys.base, ...ids));
  }

  async dropExpired(limit: number): Promise<DeferredMsg[]> {
    this.open();
    checkLimit(limit);
    const [ids, msgs, merged, dropped] = await retriedMidMove(() => this.scripts.sendgateDeferExpire(this.keyList.length, ...this.keyList, this.keys.base, limit));
    return this.readAll(ids, msgs, merged, dropped).read;
  }

  /**
   * HSCAN of the msg hash (every held msg, due or leased, is a field of it),
   * a page at a time: no script holds Redis for the whole listing. HSCAN may
   * answer a field twice: each id counts once.
   */
  async scan(limit: number): Promise<HeldScan> {
    this.open();
    checkScanLimit(limit);
    const seen = new Set<string>();
    const msgs: DeferredMsg[] = [];
    let cursor = "0";
    let cutShort = false;
    do {
      const [next, page] = await this.client.hscan(this.keys.msg, cursor, "COUNT", SCAN_PAGE);
      cursor = next;
      for (let i = 0; i + 1 < page.length; i += 2) {
        const id = page[i];
        if (seen.has(id)) continue;
        // a msg past the bound: the listing is cut short (at exactly the bound it is not)
        if (seen.size >= limit) {
          cutShort = true;
          break;
        }
        seen.add(id);
        try {
          msgs.push(JSON.parse(this.codec.decode(page[i + 1])) as DeferredMsg);
        } catch {
          // damaged: a take reports and removes it
        }
      }
    } while (cursor !== "0" && !cutShort);
    return { msgs, scanned: seen.size, complete: !cutShort };
  }

  async size(): Promise<number> {
    this.open();
    const [due, lease] = await this.atomically((m) => m.zcard(this.keys.due).zcard(this.keys.lease));
    return Number(due) + Number(lease);
  }

  async nextDueAt(): Promise<number | null> {
    this.open();
    const [due, lease] = await this.atomically((m) => m.zrange(this.keys.due, 0, 0, "WITHSCORES").zrange(this.keys.lease, 0, 0, "WITHSCORES"));
    const scores = [due, lease].flatMap((pair) => (Array.isArray(pair) && pair.length >= 2 ? [Number(pair[1])] : []));
    return scores.length === 0 ? null : Math.min(...scores);
  }

  /** Leaves the client open: it belongs to the cap-config's store. */
  async close(): Promise<void> {
    this.closed = true;
  }

  /** A tag's index: in the queue's hash tag, so one script (and one MULTI) stays in one cluster slot. */
  private tagKey(tag: string): string {
    return `${this.keys.base}:t:${tag}`;
  }

  /** Holds and files under their tags in one MULTI: a held msg is never left out of its tag's index. */
  private async putTagged(putArgs: [number, ...(string | number)[]], tagged: readonly { args: (string | number)[]; tag?: string }[]): Promise<(string | number)[]> {
    const multi = this.client.multi() as unknown as DeferMulti;
    multi.sendgateDeferPut(...putArgs);
    // args[0] is the id, args[1] the release-at (putArgs)
    multi.sendgateDeferTag(tagged.length, ...tagged.map((t) => this.tagKey(t.tag as string)), ...tagged.flatMap((t) => [t.args[0] as string, t.args[1] as number]));
    const replies = await multi.exec();
    if (!replies) throw new Error("defer queue: transaction aborted");
    const [putErr, put] = replies[0];
    if (putErr) throw putErr;
    const [tagErr] = replies[1];
    if (tagErr) throw tagErr;
    return put as (string | number)[];
  }

  /** The arguments of one item of defer_put.lua (throws naming what is wrong with it). */
  private putArgs(item: DeferItem): (string | number)[] {
    const { entry, collapseKey } = item;
    this.checkGate(entry);
    if (collapseKey !== undefined && typeof collapseKey !== "string") throw new TypeError("defer: collapseKey must be a string");
    const leaseUntil = checkLeaseUntil(item);
    const { id, releaseAt, stored } = prepareDeferral(entry);
    const key = collapseKey ?? "";
    const merge = key === "" ? [] : mergedItems(entry).map((m) => this.codec.encode(heldJson(m)));
    return [
      id, releaseAt, this.codec.encode(heldJson(stored)), key,
      dropAt(entry) ?? "", leaseUntil ?? "", entry.collapsedDropped ?? 0, merge.length, ...merge,
    ];
  }

  /** The arguments of a msg held leased for defer_lease.lua: id, release-at, stored, drop time, lease until (throws naming what is wrong with it). */
  private leasedArgs(item: DeferItem): LeasedArgs {
    const { entry } = item;
    this.checkGate(entry);
    const leaseUntil = checkLeaseUntil(item) as number;
    const { id, releaseAt, stored } = prepareDeferral(entry);
    return [id, releaseAt, this.codec.encode(heldJson(stored)), dropAt(entry) ?? "", leaseUntil];
  }

  private checkGate(entry: DeferInput | undefined): void {
    if (entry?.gate !== this.scope.gate) throw new TypeError(`defer: gate ${JSON.stringify(entry?.gate)} does not hold its msgs in the queue of gate ${this.scope.gate}`);
  }

  private readAll(ids: string[], msgs: Reply, merged: string[][], dropped: Reply): { read: DeferredMsg[]; damaged: string[] } {
    const read: DeferredMsg[] = [];
    const damaged: string[] = [];
    ids.forEach((id, i) => {
      const json = msgs[i];
      if (json === null || json === undefined) return;
      try {
        const items = (merged[i] ?? []).flatMap((m) => {
          const value = JSON.parse(this.codec.decode(m)) as unknown;
          // a msg moved from the layout before 0.2 keeps its merged msgs as one JSON array
          return (Array.isArray(value) ? value : [value]) as Record<string, unknown>[];
        });
        read.push(withMerged(JSON.parse(this.codec.decode(json)) as DeferredMsg, items, Number(dropped[i] ?? 0)));
      } catch (err) {
        damaged.push(id);
        this.options.onDamaged?.(id, asError(err));
      }
    });
    return { read, damaged };
  }

  private async atomically(build: (m: ReturnType<RedisClient["multi"]>) => ReturnType<RedisClient["multi"]>): Promise<unknown[]> {
    const replies = await retriedMidMove(() => build(this.client.multi()).exec());
    if (!replies) throw new Error("defer queue: transaction aborted");
    return replies.map(([err, value]) => {
      if (err) throw err;
      return value;
    });
  }

  private open(): void {
    if (this.closed) throw new Error("defer queue is closed");
  }

  private get scripts(): DeferScripts {
    return this.client as unknown as DeferScripts;
  }
}
