import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

let gc: (() => void) | undefined;

/**
 * A full collection. mocha and `npm run bench` run plain `node`, so this turns
 * on --expose-gc itself. The bench calls it so one scenario does not pay for
 * the garbage of the one before; tests, to measure what a burst keeps alive.
 */
export function collectGarbage(): void {
  if (!gc) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as () => void;
  }
  gc();
}
