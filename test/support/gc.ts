import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** A full collection (mocha runs without --expose-gc). */
export function collectGarbage(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}
