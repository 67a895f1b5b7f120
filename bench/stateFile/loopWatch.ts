import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { medianBy } from "../stats";
import { ms } from "../report/markdown";

/** What the event loop went through while watched. */
export interface LoopStalls {
  /** the longest gap between the ticks of a 1 ms timer */
  longestGapMs: number;
  /** monitorEventLoopDelay's max (1 ms resolution) */
  delayMaxMs: number;
  /** the longest garbage-collection pause meanwhile: what of a stall is the collector's, not the code's */
  longestGcMs: number;
}

/** Watches the loop from now until the returned stop is called. */
export function watchLoop(): () => LoopStalls {
  let last = performance.now();
  let longestGapMs = 0;
  const tick = (): void => {
    const now = performance.now();
    longestGapMs = Math.max(longestGapMs, now - last);
    last = now;
  };
  const ticker = setInterval(tick, 1);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let longestGcMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) longestGcMs = Math.max(longestGcMs, entry.duration);
  });
  gc.observe({ entryTypes: ["gc"] });
  return () => {
    clearInterval(ticker);
    tick();
    delay.disable();
    // entries of pauses already ended are handed to the observer on a later turn: taken here
    for (const entry of gc.takeRecords()) longestGcMs = Math.max(longestGcMs, entry.duration);
    gc.disconnect();
    return { longestGapMs, delayMaxMs: delay.max / 1e6, longestGcMs };
  };
}

/** runs of each stall row: the box's own pauses move a single run by milliseconds */
export const STALL_RUNS = 3;

/** Several runs of one watch: the run of the median longest stall, and the lowest and highest longest stall beside it. */
export interface StallRuns {
  median: LoopStalls;
  lowestGapMs: number;
  highestGapMs: number;
}

export function stallRuns(runs: readonly LoopStalls[]): StallRuns {
  const { median, lowest, highest } = medianBy(runs, (r) => r.longestGapMs);
  return { median, lowestGapMs: lowest.longestGapMs, highestGapMs: highest.longestGapMs };
}

/** The cells of a stall row: the median run's longest stall (the lowest and highest beside it), its loop delay max and its longest GC pause. */
export function stallCells(runs: StallRuns): string[] {
  const { median } = runs;
  return [`${ms(median.longestGapMs)} (${ms(runs.lowestGapMs)}–${ms(runs.highestGapMs)})`, ms(median.delayMaxMs), ms(median.longestGcMs)];
}

/** node's gc(): a full collection */
export type Collector = () => void;

/** node's gc(), without --expose-gc on the command line */
export function collector(): Collector {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as Collector;
}
