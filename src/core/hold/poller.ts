import { ackReleased } from "./ackReleased";
import type { DeferQueue, DeferredMsg } from "./heldQueue";

export interface DeferPollerOptions {
  queue: DeferQueue;
  /** how long a taken batch is this instance's; not acked by then, it goes to whoever takes next */
  leaseMs: number;
  /** most msgs per take */
  batch: number;
  /** longest sleep between takes when nothing is due (e.g. 250 ms): bounds how late a msg deferred elsewhere is seen */
  idleMs: number;
  /**
   * releases a batch; when it throws, nothing of the batch is acked and it all
   * comes back after the lease. It may answer the ids it did not release after
   * all: they are not acked (put back due, or left to their lease)
   */
  onDue: (msgs: DeferredMsg[]) => Promise<void | ReadonlySet<string>>;
  /** a failed take, release or ack (the loop goes on) */
  onError?: (err: unknown) => void;
  /** shortest sleep when a msg looks due by this clock but the store's clock disagrees (default 5 ms) */
  minSleepMs?: number;
  /**
   * a queue whose msgs fall due one after another (a throughput-gate's paced
   * msgs): after a batch was released, take again after minSleepMs without
   * first asking when the next is due (one round trip less per release round)
   */
  steady?: boolean;
  /** first wait before retrying a failed ack (doubles up to 1 s; default 50 ms) */
  ackRetryMs?: number;
}

interface Run {
  stopped: boolean;
  stoppedAt?: number;
  wake?: () => void;
}

/**
 * Releases a defer queue's due msgs: take a batch, hand it to onDue, ack it;
 * when nothing is due, sleep until the next msg is due (at most idleMs). One
 * loop per poller, so it never runs two takes at once; several pollers (one per
 * instance) may share a queue, since each take is atomic in the store.
 */
export class DeferPoller {
  private run: Run | undefined;
  private loop: Promise<void> = Promise.resolve();

  constructor(private readonly options: DeferPollerOptions) {
    if (!Number.isInteger(options.batch) || options.batch < 1) throw new RangeError("DeferPoller: batch must be a positive integer");
    if (!(options.leaseMs > 0)) throw new RangeError("DeferPoller: leaseMs must be positive");
    if (!(options.idleMs > 0)) throw new RangeError("DeferPoller: idleMs must be positive");
  }

  get running(): boolean {
    return this.run !== undefined && !this.run.stopped;
  }

  start(): void {
    if (this.running) return;
    const run: Run = { stopped: false };
    this.run = run;
    // a stop() still finishing its round finishes first: never two loops at once
    this.loop = this.loop.then(() => (run.stopped ? undefined : this.rounds(run)));
  }

  /** Resolves once the round in progress (take, onDue, ack) is over; no take starts after. */
  async stop(): Promise<void> {
    const run = this.run;
    if (run) {
      run.stopped = true;
      run.wake?.();
    }
    await this.loop;
  }

  /** Cuts the current sleep short (a msg was just deferred with a near dueAt). */
  wake(): void {
    this.run?.wake?.();
  }

  private async rounds(run: Run): Promise<void> {
    const { queue, leaseMs, batch, idleMs, onDue } = this.options;
    const minSleep = Math.min(this.options.minSleepMs ?? 5, idleMs);
    while (!run.stopped) {
      let sleepMs = idleMs;
      try {
        const takenAt = Date.now();
        const msgs = await queue.takeDue(batch, leaseMs);
        if (msgs.length > 0) {
          let released = false;
          let kept: void | ReadonlySet<string>;
          try {
            kept = await onDue(msgs);
            released = true;
          } catch (err) {
            this.report(err);
          }
          const ids = msgs.flatMap((m) => (kept?.has(m.id) ? [] : [m.id]));
          const acked = released && await this.ack(ids, takenAt + leaseMs, run);
          // a full batch: more may be due right now
          if (acked && msgs.length === batch) continue;
        }
        if (run.stopped) break;
        if (this.options.steady && msgs.length > 0) {
          sleepMs = minSleep;
        } else {
          const next = await queue.nextDueAt();
          if (next !== null) sleepMs = Math.max(minSleep, Math.min(idleMs, next - Date.now()));
        }
      } catch (err) {
        this.report(err);
      }
      if (run.stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, sleepMs);
        function done(): void {
          clearTimeout(timer);
          run.wake = undefined;
          resolve();
        }
        run.wake = done;
      });
    }
  }

  /** Acks a released batch, trying again until close to the lease's end (ackReleased). */
  private async ack(ids: string[], leaseEnd: number, run: Run): Promise<boolean> {
    const { queue, leaseMs } = this.options;
    const margin = Math.min(1000, leaseMs / 10);
    const stoppedAt = (): number => (run.stopped ? (run.stoppedAt ??= Date.now()) : Number.POSITIVE_INFINITY);
    // while stopping (a redeploy), give up sooner: the lease brings the batch back to whoever runs next
    const failed = await ackReleased(queue, ids, () => Math.min(leaseEnd - margin, stoppedAt() + 2000), this.options.ackRetryMs);
    if (failed) this.report(failed);
    return failed === undefined;
  }

  private report(err: unknown): void {
    try {
      this.options.onError?.(err);
    } catch {
      // a broken error handler must not stop the releases
    }
  }
}
