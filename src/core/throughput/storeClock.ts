const WINDOW_MS = 10_000;

/**
 * This process's clock in ms with its fractions: a StoreClock's and a
 * Pacer's, so a release is timed on the clock the store's time was read by. With Date.now() (whole ms) an answer read early
 * in a ms gave a sample up to 1 ms too large, and a release up to 1 ms early
 * by the store's clock (the memory store's clock is whole ms too).
 */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * This process's view of the store's clock, from the store times its answers
 * carry: store time − local time at receipt. An answer read late (a busy event
 * loop) gives a smaller sample, never a larger one, so the largest sample of
 * the last window or two is the closest; releasing at `toLocal(at)` is never
 * early by the store's clock. Two windows, so a drifting clock is followed.
 */
export class StoreClock {
  private best = Number.NEGATIVE_INFINITY;
  private previous = Number.NEGATIVE_INFINITY;
  private windowStart = Number.NEGATIVE_INFINITY;

  /** `now`: this process's clock, at least as fine as the store's (preciseNow), or a sample can exceed the true offset */
  constructor(private readonly now: () => number = preciseNow) {}

  /** An answer computed at `storeMs` (the store's clock) was read now. */
  observe(storeMs: number): void {
    const local = this.now();
    if (local - this.windowStart >= WINDOW_MS) {
      this.previous = this.best;
      this.best = Number.NEGATIVE_INFINITY;
      this.windowStart = local;
    }
    const sample = storeMs - local;
    if (sample > this.best) this.best = sample;
  }

  /** store time − local time (0 before any answer) */
  get offsetMs(): number {
    const offset = Math.max(this.best, this.previous);
    return Number.isFinite(offset) ? offset : 0;
  }

  /** The local instant at which the store's clock reads `storeMs`. */
  toLocal(storeMs: number): number {
    return storeMs - this.offsetMs;
  }
}

/**
 * The clock of a store in this process (the memory store reads
 * performance.timeOrigin + performance.now(), to the whole ms): store time is
 * local time, so there is no offset to learn: an offset learnt from answers
 * read late (the loop busy with a burst's receives, a GC pause) would pace
 * every msg that much late until a prompt answer came.
 */
export class LocalStoreClock extends StoreClock {
  override observe(): void {}

  override get offsetMs(): number {
    return 0;
  }
}

/**
 * A preciseNow() instant read on Date.now()'s clock, which a msg's expiresAt
 * and the release's expiry check use. The two part when the system clock is
 * stepped after this process started (performance.now() never steps): a msg
 * judged to leave before its expiresAt on one clock was found expired on the
 * other at its release.
 */
export function preciseToWall(ms: number): number {
  return ms + (Date.now() - preciseNow());
}
