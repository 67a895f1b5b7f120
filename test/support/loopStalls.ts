/**
 * When this process's event loop stood still: a timer that should fire every
 * TICK_MS, and each gap between its firings much longer than that (a GC
 * pause, another test's leftovers, a loaded box not scheduling the process).
 * A msg's wait that overlaps such a gap was spent waiting for the process,
 * not for the gate, whose own waits (a timer, a store's answer) let the
 * ticks go on.
 */
const TICK_MS = 2;
/** a gap longer than this counts as a stall (the timer alone is late by a ms or two on a busy box) */
const STALL_MS = 10;

export class LoopStalls {
  private readonly gaps: Array<[number, number]> = [];
  private last = performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setInterval(() => {
      const now = performance.now();
      if (now - this.last > STALL_MS) this.gaps.push([this.last, now]);
      this.last = now;
    }, TICK_MS);
  }

  /** ms of [from, to] (performance.now()) the loop stood still */
  within(from: number, to: number): number {
    let stalled = 0;
    for (const [start, end] of this.gaps) stalled += Math.max(0, Math.min(end, to) - Math.max(start, from));
    return stalled;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
