import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

let gc: (() => void) | undefined;

/**
 * A full collection, so one scenario does not pay for the garbage of the one
 * before (a closed memory store's counters). `npm run bench` runs plain
 * `node`, so this turns on --expose-gc itself.
 */
export function collectGarbage(): void {
  if (!gc) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as () => void;
  }
  gc();
}
