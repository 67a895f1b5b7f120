import type { Node } from "node-red";
import type { Completions } from "./completions";
import type { BenchMsg } from "./msgSource";

/** Where a run's msgs come from: a MsgSource, or any other maker of msgs. */
export interface MsgFeed {
  next(): BenchMsg;
}
import { noVerdicts, tally, type Verdicts } from "./verdicts";

export interface RunResult {
  msgs: number;
  elapsedMs: number;
  /** receive() to done(), per msg, in issue order */
  latenciesMs: Float64Array;
  verdicts: Verdicts;
}

export interface DriveOptions {
  count: number;
  /** msgs in flight at once */
  concurrency: number;
  /** give up when no msg completes for this long */
  stallMs?: number;
  /** the caps every admitted msg must have claimed (see tally) */
  capIds?: ReadonlySet<string>;
}

/**
 * Closed loop: keeps `concurrency` msgs in flight until `count` have completed.
 * Freed slots are refilled on the next event-loop turn (setImmediate), as msgs
 * arriving from I/O or from an upstream node (asyncMessageDelivery) would be,
 * rather than in the same microtask chain, which would starve timers and I/O.
 */
export function drive(gate: Node, completions: Completions, source: MsgFeed, options: DriveOptions): Promise<RunResult> {
  const { count, concurrency } = options;
  const stallMs = options.stallMs ?? 10_000;
  const latenciesMs = new Float64Array(count);
  const verdicts = noVerdicts();
  let issued = 0;
  let completed = 0;
  let refillScheduled = false;
  let lastProgress = performance.now();
  const began = performance.now();

  return new Promise((resolve, reject) => {
    const watchdog = setInterval(() => {
      if (performance.now() - lastProgress < stallMs) return;
      clearInterval(watchdog);
      completions.forgetAll();
      reject(new Error(`no msg completed for ${stallMs} ms (${completed}/${count} done, ${issued - completed} in flight)`));
    }, 500);

    function issue(): void {
      const slot = issued++;
      const msg = source.next();
      const sentAt = performance.now();
      completions.expect(msg._msgid, (event) => {
        const now = performance.now();
        latenciesMs[slot] = now - sentAt;
        lastProgress = now;
        tally(verdicts, event, options.capIds);
        completed++;
        if (completed === count) {
          clearInterval(watchdog);
          resolve({ msgs: count, elapsedMs: now - began, latenciesMs, verdicts });
        } else if (issued < count && !refillScheduled) {
          refillScheduled = true;
          setImmediate(refill);
        }
      });
      gate.receive(msg);
    }

    function refill(): void {
      refillScheduled = false;
      while (issued < count && issued - completed < concurrency) issue();
    }

    if (count === 0) {
      clearInterval(watchdog);
      resolve({ msgs: 0, elapsedMs: 0, latenciesMs, verdicts });
      return;
    }
    refill();
  });
}
