import { StoreUnavailableError } from "../errors";

/**
 * The wait for a store's first connection, one for every call: it ends when
 * the store connects, or `graceMs` after the store was opened. A burst that
 * arrives with the deploy waits for a store that is merely still connecting
 * (a cluster's slot map takes longer than a call's timeout) instead of
 * failing; a store that is not there fails its first calls when the grace
 * ends and every later one at once, so the first verdict of an unreachable
 * store comes within the grace (SPEC §9), not a grace after each call.
 */
export class FirstConnection {
  private readonly connected: Promise<void>;
  private timer: NodeJS.Timeout | undefined;

  /** `whenReady` is called once with what to call when the store first connects */
  constructor(graceMs: number, whenReady: (ready: () => void) => void) {
    this.connected = new Promise<void>((resolve, reject) => {
      this.timer = setTimeout(() => reject(new StoreUnavailableError("not_ready", `the store has not connected in the ${graceMs} ms since it was opened`)), graceMs);
      // a store nobody calls must not keep the process alive for its grace
      this.timer.unref();
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
}
