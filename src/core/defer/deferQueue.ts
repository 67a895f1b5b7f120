import { randomUUID } from "node:crypto";

/** One msg held by a cap-config's defer queue (SPEC §6). All of it is JSON. */
export interface DeferredMsg {
  /** unique; given by the caller or generated (randomUUID) */
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
   * epoch ms; a msg is handed out at `min(dueAt, expiresAt)`, so one that
   * cannot be released in time comes back at its expiry: the caller compares
   * `expiresAt` with its clock and decides (SPEC §6: skipped, defer_expired).
   */
  expiresAt?: number;
  /** the Node-RED msg as JSON-safe data (the caller serialises) */
  msg: Record<string, unknown>;
  /**
   * msgs merged into this one (collapse disposition), in arrival order. It
   * does NOT include this msg itself: a collapse of 5 msgs hands out the first
   * with 4 here (1 + collapsed.length msgs in all).
   */
  collapsed?: Record<string, unknown>[];
}

/** What `defer` accepts: a DeferredMsg whose id may be left out (or "") to have one generated. */
export type DeferInput = Omit<DeferredMsg, "id"> & { id?: string };

export interface DeferResult {
  /** the id held: the msg's own, or the held msg it was merged into */
  id: string;
  /** set when the msg was merged into a held msg (collapse) instead of held itself */
  collapsedInto?: string;
}

export interface DeferQueue {
  /**
   * Holds a msg. With `collapseKey`: if a msg with the same key is still held
   * (not yet taken), the new msg (its `msg`, then any msgs already collapsed
   * into it) is appended to that one's `collapsed` list instead, atomically,
   * and that one's id is returned as `collapsedInto`; the held msg's dueAt,
   * expiresAt and other fields do not change. Deferring an id that is already
   * held or taken replaces it (a released msg deferred again before its ack).
   */
  defer(entry: DeferInput, collapseKey?: string): Promise<DeferResult>;
  /**
   * Atomically moves up to `limit` msgs whose `min(dueAt, expiresAt) <= now`
   * into a lease of `leaseMs` and returns them, earliest first. First, msgs
   * whose lease expired (taken by an instance that died) go back to due.
   * Each msg is handed out to exactly one caller at a time. `now` is the
   * store's clock (Redis TIME in Redis, the injected clock in memory).
   */
  takeDue(limit: number, leaseMs: number): Promise<DeferredMsg[]>;
  /** Removes taken msgs for good (after they were released). Ids not leased any more are left alone. */
  ack(ids: readonly string[]): Promise<void>;
  /** msgs held (due + leased) */
  size(): Promise<number>;
  /** when a msg can next be taken: the earliest release-at held or lease expiry, or null when empty */
  nextDueAt(): Promise<number | null>;
  close(): Promise<void>;
}

/** Checks a msg before it is held; returns the id it will have and the release-at score. */
export function prepareDeferral(entry: DeferInput): { id: string; releaseAt: number; stored: DeferredMsg } {
  if (!Number.isFinite(entry.dueAt)) throw new TypeError("defer: dueAt must be a finite epoch ms");
  if (entry.expiresAt !== undefined && !Number.isFinite(entry.expiresAt)) throw new TypeError("defer: expiresAt must be a finite epoch ms");
  if (typeof entry.gate !== "string") throw new TypeError("defer: gate must be a string");
  if (entry.msg === null || typeof entry.msg !== "object") throw new TypeError("defer: msg must be an object");
  const id = entry.id !== undefined && entry.id !== "" ? entry.id : randomUUID();
  const releaseAt = Math.floor(entry.expiresAt === undefined ? entry.dueAt : Math.min(entry.dueAt, entry.expiresAt));
  return { id, releaseAt, stored: { ...entry, id } };
}

/** What a merge appends to the held msg's list: the msg, then those already collapsed into it. */
export function mergedItems(entry: DeferInput): Record<string, unknown>[] {
  return [entry.msg, ...(entry.collapsed ?? [])];
}

/** The taken msg as handed out: its own collapsed list, then what was merged into it while held. */
export function withMerged(stored: DeferredMsg, merged: readonly Record<string, unknown>[]): DeferredMsg {
  if (merged.length === 0) return stored;
  return { ...stored, collapsed: [...(stored.collapsed ?? []), ...merged] };
}

export function checkTakeArgs(limit: number, leaseMs: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError("takeDue: limit must be a positive integer");
  if (!Number.isFinite(leaseMs) || leaseMs <= 0) throw new RangeError("takeDue: leaseMs must be positive");
}
