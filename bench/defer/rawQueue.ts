import Redis from "ioredis";
import { DeferPoller } from "../../src/core/hold/poller";
import { RedisDeferQueue } from "../../src/redis/redisHeldQueue";
import type { DeferInput, DeferQueue, DeferredMsg } from "../../src/core/hold/heldQueue";
import { CHANNEL } from "../scenarios";
import type { DeferRow } from "../report/deferTable";

import { DEFER_POLLING } from "../../src/core/hold/deferrals";

/** The cap-config's poller settings */
const { batch: BATCH, leaseMs: LEASE_MS, idleMs: IDLE_MS } = DEFER_POLLING;
/** give up when no msg is deferred or acked for this long */
const STALL_MS = 10_000;

export interface RawDeferOptions {
  redisUrl: string;
  /** every key of this row starts with it (the gate queue's own `<prefix>:{<prefix>:dq}:q:…`) */
  keyPrefix: string;
  msgs: number;
  concurrency: number;
}

/**
 * The durable queue alone, through one Redis: `msgs` defer() calls (EVALSHA of
 * lua/defer_put.lua), `concurrency` in flight, every msg due at once; then one
 * DeferPoller with the cap-config's batch drains them (defer_take.lua, then
 * defer_ack.lua per batch). Released counts a msg once its batch's ack returned.
 */
export async function runRawDefer(options: RawDeferOptions): Promise<DeferRow> {
  // a client of its own, as a cap-config's store has; no reconnect loop
  const client = new Redis(options.redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on("error", () => undefined);
  try {
    const queue = new RedisDeferQueue(client, { keyPrefix: options.keyPrefix, configId: "bench-config-raw", gate: "bench-gate-raw" });
    const dueAt = Date.now();
    const put = await deferAll(queue, options.msgs, options.concurrency, (i) => heldLike(options.keyPrefix, i, dueAt));
    const held = await queue.size();
    if (held !== options.msgs) throw new Error(`defer-raw: ${held} msgs held after ${options.msgs} defer() calls`);
    const drain = await drainAll(queue, options.msgs);
    const left = await queue.size();
    if (left !== 0) throw new Error(`defer-raw: ${left} msgs still held after the poller released ${drain.released}`);
    return {
      path: "raw RedisDeferQueue + DeferPoller",
      msgs: options.msgs,
      deferredPerSec: options.msgs / (put / 1000),
      releasedPerSec: options.msgs / (drain.elapsedMs / 1000),
      note: `defer() ${options.concurrency} in flight; poller batch ${BATCH}, all due`,
    };
  } finally {
    await client.quit().catch(() => client.disconnect());
  }
}

/** Calls defer() for msgs 0..count-1 with `concurrency` in flight; resolves with the elapsed ms. */
function deferAll(queue: DeferQueue, count: number, concurrency: number, entry: (i: number) => DeferInput): Promise<number> {
  const began = performance.now();
  let issued = 0;
  let done = 0;
  return new Promise((resolve, reject) => {
    let failed = false;
    function issue(): void {
      const i = issued++;
      queue.defer(entry(i)).then(() => {
        done++;
        if (done === count) resolve(performance.now() - began);
        else if (issued < count) issue();
      }, (err: unknown) => {
        if (failed) return;
        failed = true;
        reject(err instanceof Error ? err : new Error(String(err)));
      });
    }
    while (issued < count && issued < concurrency) issue();
  });
}

/** One DeferPoller until `count` msgs were taken and acked; the elapsed ms from its start to the last ack. */
async function drainAll(queue: DeferQueue, count: number): Promise<{ released: number; elapsedMs: number }> {
  let released = 0;
  let lastProgress = performance.now();
  let finish: (() => void) | undefined;
  let failure: unknown;
  // acks are counted where they return: released = taken, handed out and removed for good
  const counting: DeferQueue = {
    defer: (entry, key) => queue.defer(entry, key),
    deferMany: (items) => queue.deferMany(items),
    dropExpired: (limit) => queue.dropExpired(limit),
    takeTagged: (tag, limit, leaseMs) => queue.takeTagged(tag, limit, leaseMs),
    takeDue: (limit, leaseMs) => queue.takeDue(limit, leaseMs),
    async ack(ids) {
      await queue.ack(ids);
      released += ids.length;
      lastProgress = performance.now();
      if (released >= count) finish?.();
    },
    scan: (limit) => queue.scan(limit),
    size: () => queue.size(),
    nextDueAt: () => queue.nextDueAt(),
    close: () => queue.close(),
  };
  const seen = new Set<string>();
  const poller = new DeferPoller({
    queue: counting, leaseMs: LEASE_MS, batch: BATCH, idleMs: IDLE_MS,
    onDue: async (msgs: DeferredMsg[]) => {
      for (const m of msgs) {
        if (seen.has(m.id)) throw new Error(`defer-raw: msg ${m.id} handed out twice`);
        seen.add(m.id);
      }
    },
    onError: (err) => {
      failure ??= err;
      finish?.();
    },
  });
  const began = performance.now();
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const watchdog = setInterval(() => {
    if (performance.now() - lastProgress < STALL_MS) return;
    failure ??= new Error(`defer-raw: nothing acked for ${STALL_MS} ms (${released}/${count})`);
    finish?.();
  }, 500);
  poller.start();
  try {
    await finished;
  } finally {
    clearInterval(watchdog);
    await poller.stop();
  }
  const elapsedMs = performance.now() - began;
  if (failure !== undefined) throw failure instanceof Error ? failure : new Error(JSON.stringify(failure));
  if (released !== count) throw new Error(`defer-raw: released ${released}, expected ${count}`);
  return { released, elapsedMs };
}

/** A held msg shaped like the one a frequency-cap-gate stores (the send, its held admission), so the JSON is as long. */
function heldLike(tag: string, i: number, dueAt: number): DeferInput {
  const id = `${tag}-${i}`;
  const at = new Date(dueAt).toISOString();
  return {
    gate: "bench-gate-raw",
    dueAt,
    deferrals: 1,
    firstDeferredAt: dueAt,
    msg: {
      _msgid: id,
      messageId: id,
      recipient: `+1444${String(i).padStart(7, "0")}`,
      channel: CHANNEL,
      payload: "bench",
      admission: {
        status: "skipped", reason: "frequency_capped", gate: "frequency-cap-gate", channel: CHANNEL,
        retry_after_seconds: 1, disposition: "defer", claims: [], deferrals: 1, first_deferred_at: at,
        trail: [{ gate: "frequency-cap-gate", status: "skipped", reason: "frequency_capped", at }],
      },
    },
  };
}
