import { StoreUnavailableError } from "../errors";
import type { EarlyAnswer, Settled } from "../store/admissionStore";
import { asStoreFailure } from "../store/storeFaults";
import type { CircuitBreaker } from "../store/storeGuard";
import type { Backlog } from "./intake";
import { roundTrip } from "./roundTrip";

/** One kind of store call that many msgs' items share: `run` answers a batch of them in one round trip. */
export interface Lane<I, O> {
  readonly name: string;
  /**
   * bounded lanes take new work (admissions) and refuse it past maxQueued;
   * unbounded ones finish work already begun (give-backs, holds), which a
   * refusal would leak or lose
   */
  readonly bounded: boolean;
  /** this lane's own timeout (a hold writes a whole msg); default the queue's */
  readonly timeoutMs?: number;
  /** answers `items` in order; `early` may be told some of them before the rest (EarlyAnswer) */
  run(items: readonly I[], early?: EarlyAnswer<O>): Promise<Settled<O>[]>;
}

export interface SendQueueOptions {
  /** most items waiting or in flight; past it a bounded lane's item is refused as overloaded */
  maxQueued: number;
  /** most batches sent and not yet answered */
  maxInFlight: number;
  /** most items in one batch (batches shrink below it while the store answers slowly) */
  maxBatch: number;
  /** a sent call's timeout: how long its connection may deliver nothing while this process waits, once it is sent (roundTrip) */
  timeoutMs: number;
  breaker: CircuitBreaker;
  /** the first refusal of an overload episode (it ends when the queue has drained) */
  onOverload?: (maxQueued: number) => void;
  /** told of every store call sent: its lane, how many items, its round trip, and whether it failed as a whole */
  onCall?: (call: StoreCall) => void;
  /** the store before its first connection: what to wait on before a call's timeout starts (AdmissionStore.whenUsable) */
  whenUsable?: () => Promise<void> | undefined;
  /** when the store last delivered anything, on the wait clock (AdmissionStore.heardAt): a call waiting behind others it answers is not timed out */
  heardAt?: () => number;
}

/** One store call the queue sent (SPEC §9: its own round trip, never the wait in the queue). */
export interface StoreCall {
  lane: string;
  items: number;
  ms: number;
  result: "ok" | "timeout" | "error";
}

/** batches never shrink below this: a store slow enough to need fewer is unwell, and the breaker decides */
const MIN_BATCH = 16;
/**
 * a tick that has queued this many items sends them at once when the store has
 * room, rather than at the tick's end: the store works on them while the tick
 * goes on, so the client's work and the store's overlap
 */
const EAGER_BATCH = 32;

/** Who is told an item's answer: a promise's resolve and reject, or an object of the caller's (submitTo). */
export interface Answer<O> {
  resolve(value: O): void;
  reject(err: StoreUnavailableError): void;
}

interface Waiting {
  lane: Lane<unknown, unknown>;
  item: unknown;
  to: Answer<unknown>;
}

/**
 * A cap-config's send queue (SPEC §9): every store call of its gates waits
 * here, and only `maxInFlight` batches are at the store at once. An item that
 * finds the store idle goes at once; items that wait together (behind a call
 * in flight, or in one tick) go together: one call per lane answers the whole batch, so a
 * burst of any size costs a few round trips, and `timeoutMs` counts only the
 * store's silence once a call is sent, never the wait in the queue nor the
 * wait behind earlier calls the store is answering. Items leave in the
 * order they came, and a lane answers a batch in its order, so the sends of
 * one recipient are judged in arrival order. Items are told their answers
 * as the store reads them (EarlyAnswer): on a cluster, where a batch is a call
 * per master, a slow master's call never lets a later batch's answers
 * overtake the others', and answers read together are told in the order sent.
 */
export class SendQueue implements Backlog {
  private waiting: Waiting[] = [];
  private head = 0;
  private inFlight = 0;
  /** items waiting or in flight */
  private pending = 0;
  /** msgs waiting in its gates' intakes, not yet begun: they count towards maxQueued too */
  private outside = 0;
  private scheduled = false;
  private overloaded = false;
  /** a msg that arrived past maxQueued begins in its turn: its calls are refused (Intake) */
  private refuseAll = false;
  /** an array, not a Set: told at every msg in and out, and a Set's iterator is an object each time */
  private listeners: ((length: number) => void)[] = [];
  /** the batch size in force: shrinks while the store answers slowly, grows back while it is quick */
  private batchLimit: number;

  constructor(private readonly options: SendQueueOptions) {
    for (const [name, value] of [["maxQueued", options.maxQueued], ["maxInFlight", options.maxInFlight], ["maxBatch", options.maxBatch]] as const) {
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`SendQueue: ${name} must be a positive integer`);
    }
    this.batchLimit = options.maxBatch;
  }

  /** items waiting or in flight, and msgs waiting in its gates' intakes */
  get length(): number {
    return this.pending + this.outside;
  }

  full(): boolean {
    return this.pending + this.outside >= this.options.maxQueued;
  }

  waitingMsgs(delta: number): void {
    this.outside += delta;
    this.notify();
  }

  overflowed(): void {
    this.beginOverload();
  }

  /** An overload episode begins (warned once); it ends when nothing waits or is in flight. */
  private beginOverload(): void {
    if (this.overloaded) return;
    this.overloaded = true;
    this.options.onOverload?.(this.options.maxQueued);
  }

  refusing(begin: () => void): void {
    this.refuseAll = true;
    try {
      begin();
    } finally {
      this.refuseAll = false;
    }
  }

  /** Called with the length as batches go out and come back. */
  onLength(listener: (length: number) => void): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  submit<I, O>(lane: Lane<I, O>, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => this.submitTo(lane, item, { resolve, reject }));
  }

  /**
   * submit() with the answer told to `to`, no promise made: a caller that
   * reads the answer at once (a claim) makes one object instead of a promise
   * and the promises of its then and catch. `to` is never told inside this
   * call, and never throws.
   */
  submitTo<I, O>(lane: Lane<I, O>, item: I, to: Answer<O>): void {
    if (lane.bounded && (this.refuseAll || this.full())) {
      // a msg refused at the door was warned of then: its episode may have ended since, and it starts none
      if (!this.refuseAll) this.beginOverload();
      const refusal = new StoreUnavailableError("overloaded", `the send queue holds ${this.options.maxQueued} msgs (maxQueued)`);
      // later, not in this submit (answerLater): the refusal of one msg waiting in an intake begins the next, whose
      // submit would answer it at once, and so on down the stack, a whole burst deep
      queueMicrotask(() => to.reject(refusal));
      return;
    }
    this.waiting.push({ lane: lane, item, to: to });
    this.pending++;
    // enough for a batch of its own while the store has room: sent now, so the store works on it while this tick goes on
    // nothing at the store: sent now, since no batch gathers behind an idle store and the loop's next turn may come late
    if (this.inFlight === 0) this.flush();
    else if (this.waiting.length - this.head >= EAGER_BATCH && this.inFlight < this.options.maxInFlight) this.flush();
    else this.schedule();
  }

  /** On the next turn of the event loop: every item submitted in this one goes in the same batch. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  /**
   * Keeps batches small enough to be answered well within the timeout: a
   * full batch that took over a quarter of it halves the size; one answered
   * in under an eighth lets it grow back by a quarter (a busy store gets
   * smaller batches, a quiet one the largest).
   */
  private paced(items: number, ms: number): void {
    const { timeoutMs, maxBatch } = this.options;
    if (ms > timeoutMs / 4 && items >= this.batchLimit / 2) this.batchLimit = Math.max(MIN_BATCH, Math.floor(this.batchLimit / 2));
    else if (ms < timeoutMs / 8 && items >= this.batchLimit) this.batchLimit = Math.min(maxBatch, Math.ceil(this.batchLimit * 1.25));
  }

  private flush(): void {
    // while the half-open probe is out, the batches wait for its answer instead of failing circuit_open: their
    // timeouts have not begun, and a healthy store (the probe answered) takes them all
    while (this.inFlight < this.options.maxInFlight && this.head < this.waiting.length && !this.options.breaker.probeInFlight) {
      const end = Math.min(this.waiting.length, this.head + this.batchLimit);
      const batch = this.waiting.slice(this.head, end);
      this.head = end;
      if (this.head === this.waiting.length) {
        // every item is out: the array lets go of them now, not thousands of msgs later (they would outlive
        // their answers, be promoted by the GC and make every scavenge copy them: 7 KB a check of 50 ads)
        this.waiting = [];
        this.head = 0;
      } else if (this.head > 4096 && this.head * 2 > this.waiting.length) {
        this.waiting = this.waiting.slice(this.head);
        this.head = 0;
      }
      this.inFlight++;
      void this.dispatch(batch).finally(() => {
        this.inFlight--;
        this.notify();
        this.schedule();
      });
    }
    this.notify();
  }

  /** One call per lane of the batch, all sent at once; settles when every one is answered or failed. */
  private async dispatch(batch: Waiting[]): Promise<void> {
    const byLane = new Map<Lane<unknown, unknown>, Waiting[]>();
    for (const waiting of batch) {
      const group = byLane.get(waiting.lane);
      if (group) group.push(waiting);
      else byLane.set(waiting.lane, [waiting]);
    }
    await Promise.all([...byLane].map(([lane, group]) => this.send(lane, group)));
  }

  /**
   * Answers a group with a failure on the next microtask, not in the flush
   * that found it: an answer may end a msg and so begin the next one waiting
   * in its gate's intake, whose submit may flush again. (Here the batch still
   * counts as in flight, which bounds that; the refusal at the door in
   * submitTo is not bounded, and recursed a whole burst deep when told at
   * once: the maxQueued burst test.) The store's answers come from the socket.
   */
  private answerLater(group: readonly Waiting[], failure: StoreUnavailableError): void {
    queueMicrotask(() => {
      for (const w of group) this.answer(w, failure);
    });
  }

  /** An item is answered: it no longer counts towards maxQueued (an overload episode ends once none is left). */
  private answer(waiting: Waiting, failure: StoreUnavailableError | undefined, result?: unknown): void {
    this.pending--;
    if (this.pending + this.outside === 0) this.overloaded = false;
    try {
      if (failure) waiting.to.reject(failure);
      else waiting.to.resolve(result);
    } catch (err) {
      // an answer's reader must not throw (a promise's never do; a claim's ends its msg's turn): one that does must not
      // stop the batch's other answers, nor have them answered twice; it surfaces as it would have from a promise's then
      queueMicrotask(() => {
        throw err;
      });
    }
  }

  private async send(lane: Lane<unknown, unknown>, group: Waiting[]): Promise<void> {
    let isProbe: boolean;
    try {
      isProbe = this.options.breaker.admit();
    } catch (err) {
      if (this.options.breaker.probeInFlight) {
        // another lane of this batch went out as the probe: this one waits for its answer, first in line
        this.waiting.splice(this.head, 0, ...group);
        return;
      }
      const failure = asStoreFailure(err);
      // later, not in this flush: see answerLater
      this.answerLater(group, failure);
      return;
    }
    let sentAt = performance.now();
    // items the store told as it read their answers (EarlyAnswer), and whether the call has settled (an answer after
    // that, of a call that timed out, is late and told to no one)
    let toldEarly: Uint8Array | undefined;
    let settled = false;
    const early = (i: number, result: unknown): void => {
      if (settled || i >= group.length || toldEarly?.[i] === 1) return;
      (toldEarly ??= new Uint8Array(group.length))[i] = 1;
      this.answer(group[i], undefined, result);
    };
    try {
      // a burst that arrives with the deploy goes out before the first connection: the wait for it is not the call's round trip
      const connecting = this.options.whenUsable?.();
      if (connecting) {
        await connecting;
        sentAt = performance.now();
      }
      let running: Promise<Settled<unknown>[]>;
      try {
        running = lane.run(group.map((w) => w.item), early);
      } catch (err) {
        // answered after the await below, not in this flush (answerLater)
        running = Promise.reject(err);
      }
      const results = await roundTrip(running, lane.timeoutMs ?? this.options.timeoutMs, this.options.heardAt);
      settled = true;
      const ms = performance.now() - sentAt;
      this.paced(group.length, ms);
      let fault: StoreUnavailableError | undefined;
      let refused: Error | undefined;
      let answered = 0;
      group.forEach((w, i) => {
        const result = results[i];
        if (toldEarly?.[i] === 1) {
          answered++;
        } else if (result instanceof StoreUnavailableError) {
          fault ??= result;
          this.answer(w, result);
        } else if (result instanceof Error) {
          // the item's own refusal (a msg JSON cannot hold), answered as such: it says nothing of the store's health
          refused ??= result;
          this.answer(w, undefined, result);
        } else if (i >= results.length) {
          this.answer(w, new StoreUnavailableError("error", `answered ${results.length} of ${group.length} items`));
        } else {
          answered++;
          this.answer(w, undefined, result);
        }
      });
      // on a cluster one slot's call can fail while the others answer
      this.report(lane, group.length, ms, fault);
      // a call the store partly answered says the store is up (on a cluster, one master failing over): its failed
      // items fail on their own, and the breaker stays closed for the recipients on the healthy masters
      this.options.breaker.settle(isProbe, answered > 0 ? undefined : fault ?? refused);
    } catch (err) {
      settled = true;
      const failure = asStoreFailure(err);
      this.report(lane, group.length, performance.now() - sentAt, failure);
      // the items a master answered before the call failed or timed out keep their answers
      this.options.breaker.settle(isProbe, toldEarly === undefined ? failure : undefined);
      group.forEach((w, i) => {
        if (toldEarly?.[i] !== 1) this.answer(w, failure);
      });
    }
  }

  /** Tells the observer of a sent call; an observer's failure never stops the answers. */
  private report(lane: Lane<unknown, unknown>, items: number, ms: number, failure: StoreUnavailableError | undefined): void {
    if (!this.options.onCall) return;
    const result = failure === undefined ? "ok" : failure.kind === "timeout" ? "timeout" : "error";
    try {
      this.options.onCall({ lane: lane.name, items, ms, result });
    } catch {
      // counting is not worth a lost answer
    }
  }

  private notify(): void {
    const listeners = this.listeners;
    for (let i = 0; i < listeners.length; i++) listeners[i](this.pending + this.outside);
  }
}
