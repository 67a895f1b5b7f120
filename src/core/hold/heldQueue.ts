import { randomUUID } from "node:crypto";
import { SendFieldError } from "../errors";

/** One msg held by a gate's defer queue (SPEC §6). All of it is JSON. */
export interface DeferredMsg {
  /** unique; given by the caller (the gates derive it from cap-config, gate and messageId) or generated */
  id: string;
  /** node id of the gate that deferred it (it releases it) */
  gate: string;
  /** epoch ms */
  dueAt: number;
  /** how many times this msg has been deferred (the caller increments) */
  deferrals: number;
  /** epoch ms */
  firstDeferredAt: number;
  /**
   * epoch ms, the send's own expiresAt: a msg is handed out at
   * `min(dueAt, expiresAt)`, so one that cannot be released in time comes back
   * at its expiry: the caller compares `expiresAt` with its clock and decides
   * (SPEC §6: skipped, defer_expired).
   */
  expiresAt?: number;
  /**
   * epoch ms, the end of the gate's deferMax (the gates never hold a msg due
   * after it). Past `min(expiresAt, deadline)` a msg of a gate that runs on no
   * instance is dropped (`dropExpired`).
   */
  deadline?: number;
  /** the Node-RED msg as JSON-safe data (the caller serialises) */
  msg: Record<string, unknown>;
  /** what the gate that held it needs back at release, beside the msg (the throughput-gate: its ceiling, the recipient whose claims it carries) */
  meta?: Record<string, string>;
  /**
   * msgs merged into this one (collapse disposition), in arrival order, at
   * most MAX_MERGED (the newest). It does NOT include this msg itself: a
   * collapse of 5 msgs hands out the first with 4 here.
   */
  collapsed?: Record<string, unknown>[];
  /** how many merged msgs were left out of `collapsed` (the oldest, past MAX_MERGED) */
  collapsedDropped?: number;
}

/** What `defer` accepts: a DeferredMsg whose id may be left out (or "") to have one generated. */
export type DeferInput = Omit<DeferredMsg, "id"> & { id?: string };

export interface DeferItem {
  entry: DeferInput;
  collapseKey?: string;
  /**
   * files the msg under a tag, so `takeTagged` can take the tag's msgs before
   * they are due (the throughput-gate's ceiling: msg.flush, msg.reset). A
   * short key-safe string (the gates pass a hash).
   */
  tag?: string;
  /**
   * epoch ms: the caller keeps the msg and releases it itself (the
   * throughput-gate paces its msgs by a local timer), so it is held already
   * taken, leased until then: no take hands it out before, and the caller acks
   * it once released. Should the caller die first, it comes back when the
   * lease ends, as a taken msg does. Holding it again without a lease hands it
   * back to the pollers. Not with a collapseKey (a taken msg is no merge target).
   */
  leaseUntil?: number;
}

/** Checks an item's leaseUntil (a TypeError naming it); returns it, or undefined when there is none. */
export function checkLeaseUntil(item: DeferItem): number | undefined {
  const { leaseUntil, collapseKey } = item;
  if (leaseUntil === undefined) return undefined;
  if (!Number.isFinite(leaseUntil)) throw new TypeError("defer: leaseUntil must be a finite epoch ms");
  if (collapseKey !== undefined) throw new TypeError("defer: a msg held leased (leaseUntil) cannot have a collapseKey");
  return Math.ceil(leaseUntil);
}

export interface DeferResult {
  /** the id held: the msg's own, or the held msg it was merged into */
  id: string;
  /** set when the msg was merged into a held msg (collapse) instead of held itself */
  collapsedInto?: string;
}

/**
 * Most merged msgs a held msg keeps (the newest); the count of the others
 * travels as `collapsedDropped`. Bounds a held msg's size and a merge's cost
 * however many capped msgs share a collapse key.
 */
export const MAX_MERGED = 100;

/**
 * The queue of one gate's held msgs (SPEC §6). Every instance running the
 * gate shares it; no other gate's poller ever takes from it.
 */
export interface DeferQueue {
  /**
   * Holds a msg. With `collapseKey`: if a msg with the same key is still held
   * (not yet taken), the new msg (its `msg`, then any msgs already collapsed
   * into it) is appended to that one's merged msgs instead, atomically, and
   * that one's id is returned as `collapsedInto`; the held msg's dueAt,
   * expiresAt and other fields do not change. The same entry id merged twice
   * (a retried hold) is merged once.
   * Deferring an id that is already held replaces it (a retried hold; what was
   * merged into it stays); an id that is taken (leased) is deferred anew (it
   * came back round the chain before its ack).
   */
  defer(entry: DeferInput, collapseKey?: string): Promise<DeferResult>;
  /**
   * Holds many msgs in order, as `defer` would one after another (a msg may
   * collapse into one held earlier in the same batch). Each result is the
   * item's DeferResult, or the Error that refused that item alone.
   */
  deferMany(items: readonly DeferItem[]): Promise<(DeferResult | Error)[]>;
  /**
   * Atomically moves up to `limit` msgs whose `min(dueAt, expiresAt) <= now`
   * into a lease of `leaseMs` and returns them, earliest first. First, msgs
   * whose lease expired (taken by an instance that died) go back to due.
   * Each msg is handed out to exactly one caller at a time. `now` is the
   * store's clock (Redis TIME in Redis, the injected clock in memory).
   */
  takeDue(limit: number, leaseMs: number): Promise<DeferredMsg[]>;
  /**
   * Atomically moves up to `limit` held (not taken) msgs filed under `tag` into
   * a lease of `leaseMs` and returns them, whatever their release-at; the
   * caller acks them once it released (or dropped) them.
   */
  takeTagged(tag: string, limit: number, leaseMs: number): Promise<DeferredMsg[]>;
  /** Removes taken msgs for good (after they were released). Ids not leased any more are left alone. Idempotent. */
  ack(ids: readonly string[]): Promise<void>;
  /**
   * Removes up to `limit` held (not taken) msgs whose expiresAt or deadline
   * passed by the store's clock, and returns them: for a gate deployed on no
   * instance, which can never release them.
   */
  dropExpired(limit: number): Promise<DeferredMsg[]>;
  /**
   * Reads up to `limit` held msgs (due and leased), as stored and without
   * what was merged into them, taking nothing: for the admin API's listing,
   * which has no index by recipient. In no set order; a msg held or taken
   * meanwhile may be missed or seen twice (each id is answered once).
   * `complete` is false when the queue held more than `limit` were looked at.
   * A msg that cannot be read back counts as looked at and is left out.
   */
  scan(limit: number): Promise<HeldScan>;
  /** msgs held (due + leased) */
  size(): Promise<number>;
  /** when a msg can next be taken: the earliest release-at held or lease expiry, or null when empty */
  nextDueAt(): Promise<number | null>;
  close(): Promise<void>;
}

/** What `DeferQueue.scan` read. */
export interface HeldScan {
  msgs: DeferredMsg[];
  /** held msgs looked at (those that could not be read included) */
  scanned: number;
  /** false: the queue held more than were looked at */
  complete: boolean;
}

export function checkScanLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError("scan: limit must be a positive integer");
}

/** Checks a msg before it is held; returns the id it will have and the release-at score. Throws TypeError naming the field. */
export function prepareDeferral(entry: DeferInput): { id: string; releaseAt: number; stored: DeferredMsg } {
  if (entry === null || typeof entry !== "object") throw new TypeError("defer: entry must be an object");
  if (!Number.isFinite(entry.dueAt)) throw new TypeError("defer: dueAt must be a finite epoch ms");
  if (entry.expiresAt !== undefined && !Number.isFinite(entry.expiresAt)) throw new TypeError("defer: expiresAt must be a finite epoch ms");
  if (entry.deadline !== undefined && !Number.isFinite(entry.deadline)) throw new TypeError("defer: deadline must be a finite epoch ms");
  if (typeof entry.gate !== "string") throw new TypeError("defer: gate must be a string");
  if (entry.msg === null || typeof entry.msg !== "object") throw new TypeError("defer: msg must be an object");
  if (entry.id !== undefined && typeof entry.id !== "string") throw new TypeError("defer: id must be a string");
  const id = entry.id !== undefined && entry.id !== "" ? entry.id : randomUUID();
  const releaseAt = Math.floor(entry.expiresAt === undefined ? entry.dueAt : Math.min(entry.dueAt, entry.expiresAt));
  return { id, releaseAt, stored: { ...entry, id } };
}

/**
 * The JSON a queue keeps of a held msg (or of one merged into it). A msg JSON
 * cannot hold (a circular reference, a BigInt) is that msg's own bad input,
 * named as such: it goes to Catch, and says nothing of the store's health.
 */
export function heldJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    throw new SendFieldError("msg", `cannot be held in the defer queue: ${(err as Error).message}`);
  }
}

/** When a held msg may be dropped if its gate runs nowhere: the earlier of expiresAt and deadline (undefined: never). */
export function dropAt(entry: Pick<DeferredMsg, "expiresAt" | "deadline">): number | undefined {
  const at = Math.min(entry.expiresAt ?? Number.POSITIVE_INFINITY, entry.deadline ?? Number.POSITIVE_INFINITY);
  return Number.isFinite(at) ? Math.floor(at) : undefined;
}

/** What a merge appends to the held msg's list: the msg, then those already collapsed into it. */
export function mergedItems(entry: DeferInput): Record<string, unknown>[] {
  return [entry.msg, ...(entry.collapsed ?? [])];
}

/**
 * The taken msg as handed out: its own collapsed list, then what was merged
 * into it while held, the newest MAX_MERGED of them; the rest are counted.
 */
export function withMerged(stored: DeferredMsg, merged: readonly Record<string, unknown>[], droppedWhileHeld: number): DeferredMsg {
  if (merged.length === 0 && droppedWhileHeld === 0) return stored;
  const all = [...(stored.collapsed ?? []), ...merged];
  const over = Math.max(0, all.length - MAX_MERGED);
  const dropped = (stored.collapsedDropped ?? 0) + droppedWhileHeld + over;
  return { ...stored, collapsed: over > 0 ? all.slice(over) : all, ...(dropped > 0 ? { collapsedDropped: dropped } : {}) };
}

export function checkTakeArgs(limit: number, leaseMs: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError("takeDue: limit must be a positive integer");
  if (!Number.isFinite(leaseMs) || leaseMs <= 0) throw new RangeError("takeDue: leaseMs must be positive");
}

/** A tag is a part of a key: short and key-safe. */
export function checkTag(tag: unknown): string {
  if (typeof tag !== "string" || !/^[A-Za-z0-9._~-]{1,128}$/.test(tag)) throw new TypeError("defer: tag must be 1 to 128 key-safe characters");
  return tag;
}

export function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError("dropExpired: limit must be a positive integer");
}

/** An Error for what a batch item threw (anything thrown becomes an Error). */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
