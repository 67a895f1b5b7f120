import type { DeferInput, DeferItem, DeferQueue, DeferResult, DeferredMsg } from "./heldQueue";
import type { GateRegistry } from "./gateRegistry";
import { ackReleased } from "./ackReleased";
import { BEAT_MS } from "./gateRegistry";
import { DeferPoller } from "./poller";
import type { Lane } from "../sendQueue/sendQueue";
import type { StoreAccess } from "../store/storeAccess";
import { SendFieldError, StoreUnavailableError } from "../errors";
import { asStoreFailure, isStoreFault } from "../store/storeFaults";

/**
 * Hands out one due msg. A handler that returns a promise is waited for before
 * the batch is acked (a throughput-gate re-paces an overdue msg: it is held
 * anew before the old entry goes, so a crash in between repeats, never loses).
 * It resolves to "kept" when it did not hand the msg out after all (its gate
 * closed meanwhile): the msg is put back, due, for whoever runs the gate next.
 */
export type ReleaseHandler = (held: DeferredMsg) => void | Promise<void | "kept">;

/** How a gate's poller takes held msgs (the bench uses the same). A large batch keeps releases on time under load. */
export const DEFER_POLLING = { leaseMs: 30_000, batch: 500, idleMs: 250 } as const;
const SIZE_REFRESH_MS = 2_000;
/** how soon after a hold the gate's count of held msgs is asked again (once, however many holds came meanwhile) */
const SIZE_AFTER_HOLD_MS = 50;
/** how often the msgs of gates that run nowhere are checked (dropped once past their deadline) */
const SWEEP_MS = 30_000;
/** between tries of a hand-back the store refused (a failover as a redeploy lands) */
const HAND_BACK_RETRY_MS = 200;

/** What a closing gate could not hand back to its queue, and why. */
export interface HandBackFailure {
  error: Error;
  left: readonly Omit<DeferItem, "leaseUntil">[];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A hold writes a whole msg, and its answer must not be lost to a short send-path timeout (SPEC §9). */
export const HOLD_TIMEOUT_MS = 2_000;
/**
 * How long a hold that timed out is still waited for: Redis may yet apply it
 * (a stalled link), and only its own answer tells whether the msg is held.
 * Sent to Catch at the timeout, a msg that was held would also be released
 * later: twice.
 */
export const LATE_HOLD_MS = 10_000;

export interface DeferralsOptions {
  /** the queue of one gate (the same object for the same gate) */
  openQueue: (gate: string) => DeferQueue;
  registry: GateRegistry;
  warn: (text: string) => void;
  /** the cap-config's send queue: holds go through it, batched (one script call per gate's queue); none = straight to the queue */
  access?: StoreAccess;
  /** the first time a gate runs in this process: what it held in an older layout is moved into its queue (its own warnings) */
  firstUse?: (gate: string) => Promise<number>;
  polling?: Partial<{ leaseMs: number; batch: number; idleMs: number }>;
  beatMs?: number;
  sweepMs?: number;
}

interface Running {
  handler: ReleaseHandler;
  poller: DeferPoller;
  queue: DeferQueue;
}

/** Told a gate's queue's size and its next due msg (ms since epoch; null: none held). */
export type SizeListener = (held: number, nextDueAt: number | null) => void;

interface HeldSize {
  held: number;
  nextDueAt: number | null;
  listeners: Set<SizeListener>;
  refreshing?: boolean;
}

/**
 * A cap-config's held msgs: a durable queue per gate, and per gate running
 * here a poller that takes what is due (each msg exactly once across the
 * instances running the gate) and hands it to the gate. No poller ever takes
 * a msg of a gate it cannot release. The msgs of a gate that runs on no
 * instance wait for it until their deadline, then are dropped and reported.
 * Knows nothing of Node-RED: a gate registers a handler under its node id.
 */
export class Deferrals {
  private readonly running = new Map<string, Running>();
  /** gates that ran in this process (firstUse was called for them) */
  private readonly used = new Set<string>();
  private readonly queues = new Map<string, DeferQueue>();
  private readonly sizes = new Map<string, HeldSize>();
  private readonly timers: NodeJS.Timeout[] = [];
  /** gates that held msgs in this process: they say they run here (a gate that never held has nothing to orphan) */
  private readonly holding = new Set<string>();
  /** per gate, the hand-backs made in this turn of the loop (handBackInTurn): they go to its queue in one call */
  private readonly turns = new Map<string, { items: Omit<DeferItem, "leaseUntil">[]; done: Promise<HandBackFailure | undefined> }>();
  /** gates that closed leaving msgs in their queues and were told to the registry, since they last ran here */
  private readonly toldClosed = new Set<string>();
  private readonly polling: { leaseMs: number; batch: number; idleMs: number };
  private closing = false;
  private lastWarning = "";
  private readonly holds: Lane<DeferItem, DeferResult | SendFieldError> | undefined;
  private tickHolds: { item: DeferItem; resolve: (result: DeferResult | Error) => void }[] = [];
  /** holds that timed out, waiting for their own answer (lateAnswer) */
  private readonly lateHolds = new Map<DeferItem, (answer: DeferResult | Error) => void>();

  constructor(private readonly options: DeferralsOptions) {
    this.polling = { ...DEFER_POLLING, ...options.polling };
    // a burst's holds wait together in the send queue and go out as one deferMany per gate's queue
    this.holds = options.access?.lane("hold", async (_store, items: readonly DeferItem[]) => {
      let results: (DeferResult | Error)[];
      try {
        results = await this.holdMany(items);
      } catch (err) {
        this.answerLate(items, () => (err instanceof Error ? err : new Error(String(err))));
        throw err;
      }
      this.answerLate(items, (i) => results[i] ?? new Error("defer: no answer"));
      // a msg the queue cannot hold is answered as that msg's own error (Catch), not as a store failure
      return results.map((r) => (r instanceof SendFieldError ? r : r instanceof Error ? asStoreFailure(r) : r));
    }, { bounded: false, timeoutMs: HOLD_TIMEOUT_MS });
    const every = (ms: number, work: () => Promise<void>): void => {
      const timer = setInterval(() => void work().catch((err: Error) => this.warnOnce(`defer queue: ${err.message}`)), ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(options.beatMs ?? BEAT_MS, () => this.beat());
    every(options.sweepMs ?? SWEEP_MS, () => this.sweep());
    every(SIZE_REFRESH_MS, () => this.refreshSizes());
  }

  /** The queue of one gate. */
  queueOf(gate: string): DeferQueue {
    let queue = this.queues.get(gate);
    if (!queue) {
      queue = this.options.openQueue(gate);
      this.queues.set(gate, queue);
    }
    return queue;
  }

  /**
   * A gate releases its own held msgs from now on: its poller starts on the
   * next turn (the runtime creates a flow's nodes one after another, and the
   * nodes it sends to should be there first). Returns the unregistration,
   * which resolves once the poller's round in progress is over.
   */
  register(gate: string, handler: ReleaseHandler, timing: { minSleepMs?: number; steady?: boolean } = {}): () => Promise<void> {
    if (this.closing) throw new Error("defer queue is closed");
    const existing = this.running.get(gate);
    const queue = this.queueOf(gate);
    const poller = existing?.poller ?? new DeferPoller({
      queue, ...this.polling, ...(timing.minSleepMs !== undefined ? { minSleepMs: timing.minSleepMs } : {}), ...(timing.steady ? { steady: true } : {}),
      onDue: (msgs) => this.release(gate, msgs),
      onError: (err) => this.warnOnce(`defer queue of gate ${gate}: ${err instanceof Error ? err.message : String(err)}`),
    });
    const entry: Running = { handler, poller, queue };
    this.running.set(gate, entry);
    this.toldClosed.delete(gate);
    setImmediate(() => {
      if (this.running.get(gate) === entry && !this.closing) poller.start();
    });
    if (this.options.firstUse && !this.used.has(gate)) {
      this.used.add(gate);
      void this.options.firstUse(gate).catch((err: Error) => this.warnOnce(`gate ${gate}: ${err.message}`));
    }
    void this.refreshSize(gate);
    return async () => {
      if (this.running.get(gate) !== entry) return;
      this.running.delete(gate);
      await poller.stop();
    };
  }

  /**
   * Holds a msg, through the send queue when there is one (batched with the
   * other holds of a burst). With `leaseUntil` the caller releases it itself
   * (DeferItem.leaseUntil), then calls `acked`, or `handBack` if it cannot.
   */
  async hold(entry: DeferInput, placement: Omit<DeferItem, "entry"> = {}): Promise<DeferResult> {
    const item: DeferItem = { entry, ...placement };
    if (this.holds && this.options.access?.queue) {
      let held: DeferResult | SendFieldError;
      try {
        held = await this.options.access.submit(this.holds, item);
      } catch (err) {
        if (!(err instanceof StoreUnavailableError) || err.kind !== "timeout") throw err;
        // sent, and maybe applied: its own late answer says whether the msg is held
        const late = await this.lateAnswer(item);
        // a msg the queue could not hold, answered late: still that msg's own error
        if (late instanceof SendFieldError) throw late;
        if (late === undefined || late instanceof Error) throw err;
        return late;
      }
      if (held instanceof SendFieldError) throw held;
      return held;
    }
    // no send queue (the memory store): the holds of one tick still go together, one queue call (one journal write) per gate
    const result = await new Promise<DeferResult | Error>((resolve) => {
      this.tickHolds.push({ item, resolve });
      if (this.tickHolds.length === 1) setImmediate(() => this.holdTick());
    });
    if (result instanceof Error) throw result;
    return result;
  }

  /** The answer of a hold that timed out, when it comes within LATE_HOLD_MS (else undefined). */
  private lateAnswer(item: DeferItem): Promise<DeferResult | Error | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.lateHolds.delete(item);
        resolve(undefined);
      }, LATE_HOLD_MS);
      this.lateHolds.set(item, (answer) => {
        clearTimeout(timer);
        this.lateHolds.delete(item);
        resolve(answer);
      });
    });
  }

  /** Hands the holds that timed out and still wait their answers (the send queue answered them with the timeout). */
  private answerLate(items: readonly DeferItem[], answerOf: (index: number) => DeferResult | Error): void {
    if (this.lateHolds.size === 0) return;
    items.forEach((item, i) => this.lateHolds.get(item)?.(answerOf(i)));
  }

  /** The holds made in one tick without a send queue, in one holdMany. */
  private holdTick(): void {
    const waiting = this.tickHolds;
    this.tickHolds = [];
    this.holdMany(waiting.map((w) => w.item)).then(
      (results) => waiting.forEach((w, i) => w.resolve(results[i] ?? new Error("defer: no answer"))),
      (err: unknown) => waiting.forEach((w) => w.resolve(err instanceof Error ? err : new Error(String(err)))),
    );
  }

  /**
   * Takes every msg of `gate` held under `tag` now, whatever its due time, and
   * hands each to `each` (msg.flush releases them, msg.reset drops them), then
   * acks them: each is handed out once, even with several instances. Returns
   * how many. A msg `each` throws on is reported and acked with the others.
   */
  async takeTagged(gate: string, tag: string, each: (held: DeferredMsg) => void | Promise<void>): Promise<number> {
    const queue = this.queueOf(gate);
    let taken = 0;
    const { leaseMs } = this.polling;
    const margin = Math.min(1000, leaseMs / 10);
    for (;;) {
      const takenAt = Date.now();
      const msgs = await queue.takeTagged(tag, this.polling.batch, leaseMs);
      // acked once every one is handed out (an async handler awaited): a crash before the ack repeats, never loses
      await Promise.all(msgs.map(async (held) => {
        try {
          await each(held);
        } catch (err) {
          this.options.warn(`gate ${gate} could not hand out held msg ${held.id}: ${(err as Error).message}`);
        }
      }));
      if (msgs.length > 0) {
        // tried again until near the lease's end: one lost ack would hand every msg out a second time when it ends
        const failed = await ackReleased(queue, msgs.map((m) => m.id), () => (this.closing ? 0 : takenAt + leaseMs - margin));
        if (failed) this.warnOnce(`defer queue of gate ${gate}: ${failed.message}`);
      }
      taken += msgs.length;
      if (msgs.length < this.polling.batch) break;
    }
    void this.refreshSize(gate);
    return taken;
  }

  /**
   * Removes msgs a gate held leased and released itself, trying again for up
   * to `retryForMs` (none once the cap-config closes); past that the msgs
   * come back when their leases end, with the same release_id, and it says so.
   */
  async acked(gate: string, ids: readonly string[], retryForMs = 5_000): Promise<void> {
    if (ids.length === 0) return;
    const until = Date.now() + retryForMs;
    const failed = await ackReleased(this.queueOf(gate), ids, () => (this.closing ? 0 : until));
    if (failed) this.warnOnce(`defer queue of gate ${gate}: ${failed.message}`);
    else this.sizeChanged(gate);
  }

  /**
   * handBack, with every hand-back a gate makes in one turn of the loop going
   * to its queue in one call: a closing gate parks or hands back each msg of
   * a burst on its own as it judges it (a store call each, 2,001 for a
   * 2,000-msg burst). Each caller learns only of its own items left.
   */
  handBackInTurn(gate: string, items: readonly Omit<DeferItem, "leaseUntil">[]): Promise<HandBackFailure | undefined> {
    let turn = this.turns.get(gate);
    if (!turn) {
      const gathering: { items: Omit<DeferItem, "leaseUntil">[]; done?: Promise<HandBackFailure | undefined> } = { items: [] };
      gathering.done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        this.turns.delete(gate);
        return this.handBack(gate, gathering.items);
      });
      turn = gathering as { items: Omit<DeferItem, "leaseUntil">[]; done: Promise<HandBackFailure | undefined> };
      this.turns.set(gate, turn);
    }
    turn.items.push(...items);
    return turn.done.then((failed) => {
      if (!failed) return undefined;
      const mine = new Set(items);
      const left = failed.left.filter((item) => mine.has(item));
      return left.length === 0 ? undefined : { error: failed.error, left };
    });
  }

  /**
   * Puts msgs a gate held leased back in its queue as due (the gate closes
   * before their instants): the next poller releases them. A failed put is
   * tried again for `retryForMs` (a put is idempotent: the same id replaces
   * itself). What still cannot be put back is returned with the last error:
   * a msg held durably stays leased and comes back when its lease ends, one
   * the gate paced in process only has no copy in the store.
   */
  async handBack(gate: string, items: readonly Omit<DeferItem, "leaseUntil">[], retryForMs = 5_000): Promise<HandBackFailure | undefined> {
    if (items.length === 0) return undefined;
    const until = Date.now() + retryForMs;
    let left = items;
    let error: Error | undefined;
    /** items the queue refused for what they are (a msg JSON cannot hold): another try would refuse them again */
    const refused: Omit<DeferItem, "leaseUntil">[] = [];
    for (;;) {
      try {
        const results = await this.queueOf(gate).deferMany(left);
        const failed: Omit<DeferItem, "leaseUntil">[] = [];
        left.forEach((item, i) => {
          const result = results[i];
          if (!(result instanceof Error)) return;
          error = result;
          (isStoreFault(result) ? failed : refused).push(item);
        });
        left = failed;
      } catch (err) {
        error = err instanceof Error ? err : new Error(String(err));
      }
      if (left.length === 0 || Date.now() >= until) break;
      await sleep(HAND_BACK_RETRY_MS);
    }
    left = [...left, ...refused];
    this.sizeChanged(gate);
    // in the registry as a gate whose queue holds msgs, though it has closed: should it never run again, the sweep
    // finds it once this beat ends and drops (and reports) them past their deadline, instead of keeping them for ever
    // once per close: a closing throughput-gate hands back each msg a burst reserves then on its own
    if (left.length < items.length && !this.running.has(gate) && !this.toldClosed.has(gate)) {
      this.toldClosed.add(gate);
      await this.beat([gate]).catch((err: Error) => {
        this.toldClosed.delete(gate);
        this.warnOnce(`defer queue: ${err.message}`);
      });
    }
    if (left.length === 0 || !error) return undefined;
    this.options.warn(`gate ${gate} closed holding ${items.length} msg(s) and could not hand ${left.length} of them back to its queue (${error.message}): those held durably come back when their lease ends`);
    return { error, left };
  }

  /** How long a msg a gate holds itself stays leased past its instant (the poller's lease). */
  get leaseMs(): number {
    return this.polling.leaseMs;
  }

  /** Holds many msgs (one store call per gate's queue); each result is its item's, or the Error that refused it. */
  async holdMany(items: readonly DeferItem[]): Promise<(DeferResult | Error)[]> {
    const results = new Array<DeferResult | Error>(items.length);
    const byGate = new Map<string, number[]>();
    items.forEach((item, i) => {
      const gate = item?.entry?.gate;
      if (typeof gate !== "string") {
        results[i] = new TypeError("defer: gate must be a string");
        return;
      }
      const group = byGate.get(gate);
      if (group) group.push(i);
      else byGate.set(gate, [i]);
    });
    await Promise.all([...byGate].map(async ([gate, indexes]) => {
      try {
        const answered = await this.queueOf(gate).deferMany(indexes.map((i) => items[i]));
        indexes.forEach((index, k) => { results[index] = answered[k]; });
      } catch (err) {
        for (const index of indexes) results[index] = err instanceof Error ? err : new Error(String(err));
      }
      // a msg held leased is its holder's to release: the poller has nothing new to take
      this.held(gate, indexes.some((i) => items[i]?.leaseUntil === undefined));
    }));
    return results;
  }

  /** How many msgs each gate's queue holds, asked now (the last count known for a queue that does not answer). */
  async heldSizes(): Promise<Map<string, number>> {
    await Promise.all([...this.queues.keys()].map((gate) => this.refreshSize(gate)));
    return new Map([...this.queues.keys()].map((gate) => [gate, this.sizeOf(gate).held]));
  }

  /**
   * Every gate whose queue may hold msgs: those running here, those whose
   * queues were opened here, and those the registry knows (gates that held
   * msgs on any instance), sorted.
   */
  async knownGates(): Promise<string[]> {
    const elsewhere = await this.options.registry.known();
    return [...new Set([...this.running.keys(), ...this.queues.keys(), ...elsewhere])].sort();
  }

  /** How many msgs a gate's queue holds, and when the next is due (told now, and whenever either changes). */
  onSize(gate: string, listener: SizeListener): () => void {
    const size = this.sizeOf(gate);
    size.listeners.add(listener);
    listener(size.held, size.nextDueAt);
    return () => size.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const timer of this.timers) clearInterval(timer);
    const pollers = [...this.running.values()].map((r) => r.poller);
    this.running.clear();
    await Promise.all(pollers.map((p) => p.stop()));
    await Promise.all([...this.queues.values()].map((q) => q.close()));
  }

  /** Hands a gate's due msgs to it; when it is gone (closed meanwhile), puts them back at once for its next poller. */
  private async release(gate: string, msgs: DeferredMsg[]): Promise<ReadonlySet<string> | undefined> {
    this.lastWarning = "";
    const handler = this.running.get(gate)?.handler;
    if (!handler) {
      await this.putBack(gate, msgs);
      return;
    }
    const cannot = (held: DeferredMsg, err: unknown): void => {
      this.options.warn(`gate ${gate} could not release held msg ${held.id}: ${(err as Error).message}`);
    };
    const waiting: Promise<void>[] = [];
    const kept: DeferredMsg[] = [];
    for (const held of msgs) {
      try {
        const handed = handler(held);
        if (handed instanceof Promise) {
          waiting.push(handed.then((answer) => { if (answer === "kept") kept.push(held); }, (err: unknown) => cannot(held, err)));
        }
      } catch (err) {
        cannot(held, err);
      }
    }
    if (waiting.length > 0) await Promise.all(waiting);
    void this.refreshSize(gate);
    if (kept.length === 0) return undefined;
    // not acked with the batch: put back due for the next poller, or (that failing) back when their lease ends
    await this.putBack(gate, kept).catch((err: Error) => this.warnOnce(err.message));
    return new Set(kept.map((m) => m.id));
  }

  /** Puts taken msgs back, due, for the next poller; what cannot be put back stays leased and comes back when the lease ends. */
  private async putBack(gate: string, msgs: readonly DeferredMsg[]): Promise<void> {
    const put = await this.queueOf(gate).deferMany(msgs.map((entry) => ({ entry })));
    const failed = put.filter((r) => r instanceof Error);
    if (failed.length > 0) throw new Error(`gate ${gate} closed while releasing; ${failed.length} msg(s) wait for their lease: ${failed[0].message}`);
  }

  /** Says which gates run here and hold msgs (and `also`: a gate that closed leaving msgs in its queue). */
  private async beat(also: readonly string[] = []): Promise<void> {
    if (this.closing) return;
    const gates = [...this.running.keys()].filter((gate) => this.holding.has(gate) || this.sizeOf(gate).held > 0);
    await this.options.registry.beat([...new Set([...gates, ...also])]);
  }

  /** The msgs of gates that run nowhere: dropped (and reported) once past their deadline. */
  private async sweep(): Promise<void> {
    if (this.closing) return;
    for (const gate of await this.options.registry.orphans()) {
      if (this.running.has(gate) || this.closing) continue;
      const queue = this.queueOf(gate);
      for (;;) {
        const expired = await queue.dropExpired(500);
        if (expired.length > 0) {
          const ids = expired.map((m) => msgIdOf(m));
          this.options.warn(`dropped ${expired.length} held msg(s) of gate ${gate}, which runs on no instance, past their expiresAt or deferMax (messageIds ${ids.slice(0, 10).join(", ")}${ids.length > 10 ? ", …" : ""})`);
        }
        if (expired.length < 500) break;
      }
      await this.options.registry.forget(gate);
    }
  }

  private held(gate: string, due: boolean): void {
    if (due) this.running.get(gate)?.poller.wake();
    this.sizeChanged(gate);
    if (!this.holding.has(gate)) {
      this.holding.add(gate);
      void this.beat().catch((err: Error) => this.warnOnce(`defer queue: ${err.message}`));
    }
  }

  /** A burst holds (and a paced gate acks) in many batches: count the queue once per SIZE_AFTER_HOLD_MS, not once per batch (a round trip each). */
  private sizeChanged(gate: string): void {
    const size = this.sizeOf(gate);
    if (!size.refreshing) {
      size.refreshing = true;
      setTimeout(() => {
        size.refreshing = false;
        void this.refreshSize(gate);
      }, SIZE_AFTER_HOLD_MS).unref();
    }
  }

  private sizeOf(gate: string): HeldSize {
    let size = this.sizes.get(gate);
    if (!size) {
      size = { held: 0, nextDueAt: null, listeners: new Set() };
      this.sizes.set(gate, size);
    }
    return size;
  }

  private async refreshSizes(): Promise<void> {
    await Promise.all([...this.running.keys()].map((gate) => this.refreshSize(gate)));
  }

  private async refreshSize(gate: string): Promise<void> {
    try {
      const queue = this.queueOf(gate);
      const held = await queue.size();
      const size = this.sizeOf(gate);
      // a second read only while some are held, and someone shows it
      const nextDueAt = held > 0 && size.listeners.size > 0 ? await queue.nextDueAt() : null;
      if (held === size.held && nextDueAt === size.nextDueAt) return;
      size.held = held;
      size.nextDueAt = nextDueAt;
      for (const listener of size.listeners) listener(held, nextDueAt);
    } catch {
      // the store's own errors are reported where sends meet them
    }
  }

  /** The same failure repeats every poll while Redis is down: say it once per outage. */
  private warnOnce(text: string): void {
    if (text === this.lastWarning) return;
    this.lastWarning = text;
    this.options.warn(text);
  }
}

/** How a held msg is named in a warning: its messageId, else its _msgid, else the queue's id. */
function msgIdOf(held: DeferredMsg): string {
  const { messageId, _msgid } = held.msg as { messageId?: unknown; _msgid?: unknown };
  const id = messageId ?? _msgid;
  return typeof id === "string" || typeof id === "number" ? String(id) : held.id;
}
