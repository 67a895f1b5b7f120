import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";

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
