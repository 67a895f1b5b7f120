import type { CompleteEvent } from "../nodeRed/embeddedRed";
import type { NodeWatcher } from "./completions";
import { noVerdicts, tally, type Verdicts } from "./verdicts";

/** A msg of a run that carries its place in it (0 … count − 1). */
export interface PlacedMsg {
  seq?: number;
}

/**
 * Tallies the completions of a run whose msgs carry their place in it: an
 * array, not a Map of 100,000 ids; a msg completed twice, or one not of the
 * run, is an error. A run's tally dies with its run, so the class keeps a
 * stand-in, as the gate's per-msg classes do (src/core/keptShapes.ts): without
 * it, a full collection between runs takes the tally's map, and with it the code of
 * Node-RED's completion path compiled against it.
 */
export class PlaceTally implements NodeWatcher {
  readonly verdicts: Verdicts = noVerdicts();
  /** resolves with `performance.now()` at the last msg's completion */
  readonly finished: Promise<number>;
  private readonly seen: Uint8Array;
  private left: number;
  private finish: (at: number) => void = () => undefined;

  constructor(count: number, private readonly what: string) {
    this.seen = new Uint8Array(count);
    this.left = count;
    this.finished = new Promise((resolve) => {
      this.finish = resolve;
    });
  }

  heard(event: CompleteEvent): void {
    const seq = (event.msg as PlacedMsg).seq;
    if (seq === undefined || this.seen[seq] === 1) {
      this.verdicts.errors++;
      this.verdicts.firstError ??= seq === undefined ? `a msg not of the ${this.what} completed` : `msg ${seq} of the ${this.what} completed twice`;
      return;
    }
    this.seen[seq] = 1;
    tally(this.verdicts, event);
    if (--this.left === 0) this.finish(performance.now());
  }
}

/** kept for the life of the process: its shape outlives the runs */
export const placeTallyStandIn = new PlaceTally(0, "run");
