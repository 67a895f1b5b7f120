import { spawn } from "node:child_process";
import type { BurstRow } from "./measureBurst";

/**
 * The young generation (V8's semi-spaces) a Node-RED that takes bursts can be
 * started with: `node --max-semi-space-size=64` (or the same in NODE_OPTIONS).
 * A burst's msgs are garbage within milliseconds but the default 16 MB
 * semi-space fills every ~1,500 msgs, and each scavenge copies the ~2-3 MB of
 * msgs in flight and promotes ~2 MB more: 70 scavenges per 100,000 msgs,
 * about a quarter of the drain.
 */
export const YOUNG_GEN_MB = 64;
export const YOUNG_GEN_FLAGS = [`--max-semi-space-size=${YOUNG_GEN_MB}`];

/** where the child writes its rows: one line, after this mark, on stdout */
export const ROWS_MARK = "sgbench-young-gen-rows ";

/**
 * The burst rows again, in a Node-RED of their own started with
 * YOUNG_GEN_FLAGS (a child process: V8's heap is sized when Node starts).
 * The child reads the same BENCH_* settings from the environment.
 */
export function burstRowsInYoungGen(prefix: string, progress: (text: string) => void): Promise<BurstRow[]> {
  progress(`burst: the same rows in a Node started with ${YOUNG_GEN_FLAGS.join(" ")}`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...YOUNG_GEN_FLAGS, require.resolve("./youngGenChild")], {
      env: { ...process.env, SGBENCH_PREFIX: prefix },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => { out += chunk; });
    child.on("error", reject);
    child.on("close", (code) => {
      const line = out.split("\n").find((l) => l.startsWith(ROWS_MARK));
      if (code !== 0 || line === undefined) {
        reject(new Error(`young-generation burst child exited ${code} without its rows`));
        return;
      }
      const rows = JSON.parse(line.slice(ROWS_MARK.length)) as BurstRow[];
      resolve(rows.map((row) => ({ ...row, youngGenMb: YOUNG_GEN_MB })));
    });
  });
}
