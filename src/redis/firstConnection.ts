import { StoreUnavailableError } from "../core/errors";

/** how often the grace counts the time that passed: a longer gap between two counts was this process busy, not waiting */
const COUNT_EVERY_MS = 50;

/**
 * The wait for a store's first connection, one for every call: it ends when
 * the store connects, or once the process has had `graceMs` to connect it
 * since the store was opened. A burst that arrives with the deploy waits for
 * a store that is merely still connecting (a cluster's slot map takes longer
 * than a call's timeout) instead of failing; a store that is not there fails
 * its first calls when the grace ends and every later one at once, so the
 * first verdict of an unreachable store comes within the grace (SPEC §9), not
 * a grace after each call.
 *
 * The grace counts the time the event loop ran, a long block of it as one
 * short step: a burst handed over in one tick (a split node's whole list)
 * can block it longer than the grace, and the connection, which needs a few
 * turns of the loop, could not progress meanwhile; by wall time its grace
 * would end the moment the loop is free, in the timers phase before the
 * connection's replies are read.
 */
export class FirstConnection {
  private readonly connected: Promise<void>;
  private timer: NodeJS.Timeout | undefined;

  /** `whenReady` is called once with what to call when the store first connects */
  constructor(graceMs: number, whenReady: (ready: () => void) => void) {
    this.connected = new Promise<void>((resolve, reject) => {
      let counted = 0;
      let last = performance.now();
      const count = (): void => {
        const now = performance.now();
        counted += Math.min(now - last, 2 * COUNT_EVERY_MS);
        last = now;
        if (counted >= graceMs) reject(new StoreUnavailableError("not_ready", `the store has not connected in the ${graceMs} ms it was given since it was opened`));
        else this.wake(count, Math.min(COUNT_EVERY_MS, graceMs - counted));
      };
      this.wake(count, Math.min(COUNT_EVERY_MS, graceMs));
      whenReady(() => {
        clearTimeout(this.timer);
        resolve();
      });
    });
    // rejected with no call waiting (nothing was sent in the grace) is no unhandled rejection
    this.connected.catch(() => undefined);
  }

  /** Resolves once connected; rejects (not_ready) when the grace ended first, at once if it already has. */
  wait(): Promise<void> {
    return this.connected;
  }

  close(): void {
    clearTimeout(this.timer);
  }

  private wake(count: () => void, ms: number): void {
    this.timer = setTimeout(count, ms);
    // a store nobody calls must not keep the process alive for its grace
    this.timer.unref();
  }
}
