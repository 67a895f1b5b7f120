import type Redis from "ioredis";
import type { Cluster } from "ioredis";
import { luaScript } from "../stores/luaScripts";
import {
  checkTakeArgs, mergedItems, prepareDeferral, withMerged,
  type DeferInput, type DeferQueue, type DeferResult, type DeferredMsg,
} from "./deferQueue";

type RedisClient = Redis | Cluster;

/** The scripts this queue calls by SHA (ioredis defineCommand: EVALSHA, EVAL once on NOSCRIPT). */
interface DeferScripts {
  sendgateDeferPut(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<[string, number]>;
  sendgateDeferTake(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<[number, string[], (string | null)[], (string | null)[]]>;
  sendgateDeferAck(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number>;
}

/** The keys of one cap-config's queue, in the order the lua/defer_*.lua scripts take them. */
export interface DeferKeys {
  due: string;
  lease: string;
  msg: string;
  merged: string;
  at: string;
  ck: string;
  collapse: string;
}

/**
 * `<prefix>:{<prefix>:dq}:<part>`: under the cap-config's prefix, and one hash
 * tag for the whole queue (so each script touches one Redis Cluster slot); the
 * tag names the prefix, so two cap-configs' queues do not share a slot. The
 * recipients' tags (`{org|recipient}`) never contain `:`, so they cannot clash.
 */
export function deferKeys(prefix: string): DeferKeys {
  const base = `${prefix}:{${prefix}:dq}`;
  return {
    due: `${base}:due`,
    lease: `${base}:lease`,
    msg: `${base}:msg`,
    merged: `${base}:merged`,
    at: `${base}:at`,
    ck: `${base}:ck`,
    collapse: `${base}:collapse`,
  };
}

/**
 * The durable defer queue of one cap-config on Redis (SPEC §6). It uses the
 * cap-config's store client and does not own it: close() leaves it open.
 * Every instance on the same Redis and prefix shares the queue; each due msg
 * is handed out once, and a lease not acked in time comes back.
 */
export class RedisDeferQueue implements DeferQueue {
  readonly keys: DeferKeys;
  private readonly keyList: string[];
  private closed = false;

  constructor(private readonly client: RedisClient, keyPrefix: string) {
    if (keyPrefix.length === 0 || /[{}]/.test(keyPrefix)) throw new Error("RedisDeferQueue: keyPrefix must be non-empty and carry no { or }");
    this.keys = deferKeys(keyPrefix);
    const k = this.keys;
    this.keyList = [k.due, k.lease, k.msg, k.merged, k.at, k.ck, k.collapse];
    client.defineCommand("sendgateDeferPut", { lua: luaScript("defer_put") });
    client.defineCommand("sendgateDeferTake", { lua: luaScript("defer_take") });
    client.defineCommand("sendgateDeferAck", { lua: luaScript("defer_ack") });
  }

  async defer(entry: DeferInput, collapseKey?: string): Promise<DeferResult> {
    this.open();
    const { id, releaseAt, stored } = prepareDeferral(entry);
    const key = collapseKey ?? "";
    const merge = key === "" ? "" : mergedItems(entry).map((m) => JSON.stringify(m)).join(",");
    const [heldId, merged] = await this.scripts.sendgateDeferPut(this.keyList.length, ...this.keyList, id, releaseAt, JSON.stringify(stored), key, merge);
    return Number(merged) === 1 ? { id: heldId, collapsedInto: heldId } : { id: heldId };
  }

  async takeDue(limit: number, leaseMs: number): Promise<DeferredMsg[]> {
    this.open();
    checkTakeArgs(limit, leaseMs);
    const [, , msgs, merged] = await this.scripts.sendgateDeferTake(this.keyList.length, ...this.keyList, limit, Math.ceil(leaseMs));
    const out: DeferredMsg[] = [];
    msgs.forEach((json, i) => {
      if (json === null) return;
      const extra = merged[i];
      out.push(withMerged(JSON.parse(json) as DeferredMsg, extra ? (JSON.parse(`[${extra}]`) as Record<string, unknown>[]) : []));
    });
    return out;
  }

  async ack(ids: readonly string[]): Promise<void> {
    this.open();
    if (ids.length === 0) return;
    await this.scripts.sendgateDeferAck(this.keyList.length, ...this.keyList, ...ids);
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

  private async atomically(build: (m: ReturnType<RedisClient["multi"]>) => ReturnType<RedisClient["multi"]>): Promise<unknown[]> {
    const replies = await build(this.client.multi()).exec();
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
