import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

const PACKAGE_NAME = "@sendgate/node-red-frequency-cap";

/** The folder of this package's package.json, found from here (works from bench/ and dist/bench/). */
export function packageRoot(): string {
  let dir = __dirname;
  for (;;) {
    const file = join(dir, "package.json");
    if (existsSync(file) && (JSON.parse(readFileSync(file, "utf8")) as { name?: unknown }).name === PACKAGE_NAME) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`${PACKAGE_NAME} package.json not found above ${__dirname}`);
    dir = parent;
  }
}
