import { StoreUnavailableError } from "../errors";
import { FailOpenReporter } from "./failOpenReporter";
import { SendQueue, type Answer, type Lane, type StoreCall } from "../sendQueue/sendQueue";
import { asStoreFailure } from "./storeFaults";
import { CircuitBreaker, StoreGuard } from "./storeGuard";
import type { AdmissionStore, EarlyAnswer, Settled } from "./admissionStore";

export type FailMode = "open" | "closed";

export interface StoreAccessOptions {
  failMode: FailMode;
  /** a sent store call's timeout */
  timeoutMs: number;
  /** most msgs waiting in the send queue (SPEC §11 maxQueued) */
  maxQueued: number;
  /** past maxQueued: closed (default), the msg goes to Catch; open, it goes on with reason overloaded */
  overloadMode?: FailMode;
  /** most batches at the store at once, and most items in one (tuned by the bench) */
  maxInFlight?: number;
  maxBatch?: number;
  warn: (text: string) => void;
  /** told of every store call the send queue sends (the metrics' latency histogram) */
  onStoreCall?: (call: StoreCall) => void;
}

export const SEND_QUEUE_DEFAULTS = { maxInFlight: 4, maxBatch: 256 } as const;

/**
 * A cap-config's one way into its store. A remote store's calls wait in the
 * send queue and go out in batches under a timeout and a circuit breaker; the
 * memory store answers at once. A failure either fails open (counted, warned
 * with org and channel) or is thrown for the msg to go to Catch (SPEC §9).
 */
export class StoreAccess {
  readonly failMode: FailMode;
  readonly overloadMode: FailMode;
  readonly breaker = new CircuitBreaker();
  /** absent for the memory store: nothing ever waits */
  readonly queue: SendQueue | undefined;
  readonly failOpen: FailOpenReporter;
  /** block-list edits and listings: bulk work, off the send path, with a timeout of its own */
  private readonly adminGuard = new StoreGuard({ timeoutMs: 30_000 });

  constructor(readonly store: AdmissionStore, options: StoreAccessOptions) {
    this.failMode = options.failMode;
    this.overloadMode = options.overloadMode ?? "closed";
    // a connection that is ready again is the store's own word that it is well
    store.onStateChange((state) => { if (state === "ready") this.breaker.reset(); });
    this.failOpen = new FailOpenReporter(options.warn);
    this.queue = store.remote
      ? new SendQueue({
        maxQueued: options.maxQueued,
        maxInFlight: options.maxInFlight ?? store.batching?.maxInFlight ?? SEND_QUEUE_DEFAULTS.maxInFlight,
        maxBatch: options.maxBatch ?? store.batching?.maxBatch ?? SEND_QUEUE_DEFAULTS.maxBatch,
        timeoutMs: options.timeoutMs,
        breaker: this.breaker,
        ...(options.onStoreCall ? { onCall: options.onStoreCall } : {}),
        ...(store.whenUsable ? { whenUsable: () => store.whenUsable?.() } : {}),
        ...(store.heardAt ? { heardAt: () => store.heardAt?.() ?? -Infinity } : {}),
        onOverload: (max) => options.warn(this.overloadMode === "open"
          ? `the send queue is full (${max} msgs, maxQueued): new msgs go on with reason "overloaded", past their caps, until it drains (overload mode open)`
          : `the send queue is full (${max} msgs, maxQueued): new msgs go to Catch, to be retried, until it drains (overload mode closed)`),
      })
      : undefined;
  }

  /** A lane of this store's calls, answered in batches (see SendQueue). */
  lane<I, O>(name: string, run: (store: AdmissionStore, items: readonly I[], early?: EarlyAnswer<O>) => Promise<Settled<O>[]>, options: { bounded?: boolean; timeoutMs?: number } = {}): Lane<I, O> {
    return {
      name,
      bounded: options.bounded ?? true,
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      run: (items, early) => run(this.store, items, early),
    };
  }

  /** One item's answer: through the send queue for a remote store, at once for the memory store. */
  submit<I, O>(lane: Lane<I, O>, item: I): Promise<O> {
    if (this.queue) return this.queue.submit(lane, item);
    return lane.run([item]).then(([result]) => {
      if (result instanceof StoreUnavailableError) throw result;
      return result;
    });
  }

  callAdmin<T>(work: (store: AdmissionStore) => Promise<T>): Promise<T> {
    return this.store.remote ? this.adminGuard.run(() => work(this.store)) : work(this.store);
  }

  /**
   * submit() with the answer told to `to` (a failure as a StoreUnavailableError, for its fail mode to judge), no promise
   * made for it: for a call per msg of a burst (a claim), which would make one for the answer and more to read it.
   */
  submitTo<I, O>(lane: Lane<I, O>, item: I, to: Answer<O>): void {
    if (this.queue) {
      this.queue.submitTo(lane, item, to);
      return;
    }
    lane.run([item]).then(([result]) => {
      if (result instanceof StoreUnavailableError) to.reject(result);
      else to.resolve(result);
    }, (err: unknown) => to.reject(asStoreFailure(err)));
  }

  /** For a send path: the store's answer, or the failure when the fail mode is open (thrown when closed). */
  decide<I, O>(org: string, channel: string, lane: Lane<I, O>, item: I): Promise<O | StoreUnavailableError> {
    return this.submit(lane, item).catch((err: unknown) => this.failed(org, channel, err));
  }

  /** Whether failed() throws this failure (to Catch) rather than let the msg go on. */
  failsClosed(err: unknown): boolean {
    return (asStoreFailure(err).kind === "overloaded" ? this.overloadMode : this.failMode) === "closed";
  }

  /**
   * Applies the fail mode to a failure on a send path (the store, or the rules
   * it needs), and the overload mode to a msg refused past maxQueued: the store
   * is well then, and only an operator who chose so lets a msg past its caps.
   */
  failed(org: string, channel: string, err: unknown): StoreUnavailableError {
    const failure = asStoreFailure(err);
    if (failure.kind === "overloaded") {
      if (this.overloadMode === "closed") throw failure;
      // an overload is warned once per episode by the queue, not per org and channel
      this.failOpen.countQuietly();
      return failure;
    }
    if (this.failMode === "closed") throw failure;
    this.failOpen.report(org, channel, failure.message);
    return failure;
  }
}
