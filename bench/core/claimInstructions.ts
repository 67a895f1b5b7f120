import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Redis from "ioredis";
import type { ClaimRequest, CounterSpec } from "../../src/core/store/admissionStore";
import { claimArgs } from "../../src/redis/scriptArgs";
import { luaScript } from "../../src/redis/scripts";
import { freePort } from "../../test/support/ports";
import { seededRandom } from "../load/random";

const run = promisify(execFile);

/** What one script costs Redis per claim, in instructions of its main thread. */
export interface InstructionRow {
  name: string;
  claims: number;
  perClaim: number;
}

export type ClaimInstructions = { rows: InstructionRow[] } | { skipped: string };

/** 3 caps of 5 per 10 min, as the core rows; every claim of a batch has them */
const COUNTERS: readonly CounterSpec[] = ["a", "b", "c"].map((field) => ({ field, windowMs: 600_000, max: 5 }));
const RECIPIENTS = 20_000;
const BATCH = 50;
/** batches before the measured ones: the recipients' counters hold 1.5 entries on average when measuring begins */
const WARM_UP = 600;
const MEASURED = 200;

/**
 * The three commands a claim cannot do without, on the same keys in the same
 * batches: read its counters, write them, look at the hash's life. A claim's
 * cost over this is the script's own.
 */
const FLOOR = `
for k = 1, #KEYS do
  redis.call('HMGET', KEYS[k], 'a', 'b', 'c')
  redis.call('HSET', KEYS[k], 'a', ARGV[1], 'b', ARGV[1], 'c', ARGV[1])
  redis.call('PTTL', KEYS[k])
end
return 1`;

/** The same batches for every script: keys and the claim's arguments, from a seeded draw. */
function batches(): { keys: string[]; args: (string | number | Buffer)[] }[] {
  const random = seededRandom(40);
  let n = 0;
  return Array.from({ length: WARM_UP + MEASURED }, () => {
    const requests: ClaimRequest[] = Array.from({ length: BATCH }, () => {
      const recipient = `+1${String(Math.floor(random() * RECIPIENTS)).padStart(7, "0")}`;
      return { key: `bench:{default|${recipient}}:c`, member: `m${n++}`, token: 1, counters: COUNTERS };
    });
    return { keys: requests.map((r) => r.key), args: claimArgs(requests) };
  });
}

/**
 * A redis-server under callgrind, given the first `calls` batches, then shut
 * down: the instructions it ran in all (startup included).
 */
async function countInstructions(dir: string, script: string, floorValue: string | undefined, calls: number): Promise<number> {
  const port = await freePort();
  const out = join(dir, `callgrind.${port}`);
  const server = spawn("valgrind", ["--tool=callgrind", `--callgrind-out-file=${out}`, "redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
  const exited = new Promise((resolve) => server.once("exit", resolve));
  // a server that is gone (valgrind or redis-server missing, a crash) fails the run instead of holding it
  const gone = exited.then(() => { throw new Error("redis-server under valgrind exited before it was done"); });
  gone.catch(() => undefined);
  // valgrind takes seconds to start redis-server: retried until it answers
  const redis = new Redis(`redis://127.0.0.1:${port}`, { retryStrategy: () => 200, maxRetriesPerRequest: null });
  redis.on("error", () => undefined);
  try {
    const sha = String(await Promise.race([redis.script("LOAD", script), gone]));
    const all = batches();
    for (let i = 0; i < calls; i++) {
      const { keys, args } = all[i];
      await Promise.race([redis.evalsha(sha, keys.length, ...keys, ...(floorValue === undefined ? args : [floorValue])), gone]);
    }
  } finally {
    redis.disconnect();
    server.kill("SIGTERM");
    await exited;
  }
  const summary = /^(?:summary|totals): (\d+)/m.exec(readFileSync(out, "utf8"));
  if (!summary) throw new Error(`no instruction count in ${out}`);
  return Number(summary[1]);
}

/**
 * Redis instructions per claim of lua/caps/claim.lua (3 caps, batches of 50
 * over 20,000 recipients), counted by valgrind's callgrind: a count does not
 * move with what else runs on a shared box, as CPU time does, so two builds
 * compare to the percent. Each script runs in two servers fed the same
 * batches, one stopped after the warm-up, the other after the measured ones:
 * the difference is the measured claims' alone. Beside it, the floor: the
 * three commands a claim must run (FLOOR), on the same keys.
 */
export async function measureClaimInstructions(progress: (text: string) => void): Promise<ClaimInstructions> {
  try {
    await run("valgrind", ["--version"]);
  } catch {
    return { skipped: "valgrind is not installed (apt install valgrind)" };
  }
  const dir = mkdtempSync(join(tmpdir(), "sendgate-callgrind-"));
  try {
    const rows: InstructionRow[] = [];
    // two entries and a half, what the measured claims write on average (11 bytes an entry)
    const floorValue = "x".repeat(27);
    for (const [name, script, value] of [["claim.lua", luaScript("claim"), undefined], ["floor: HMGET, HSET, PTTL", FLOOR, floorValue]] as const) {
      progress(`claim instructions: ${name} under callgrind`);
      const warm = await countInstructions(dir, script, value, WARM_UP);
      const all = await countInstructions(dir, script, value, WARM_UP + MEASURED);
      rows.push({ name, claims: MEASURED * BATCH, perClaim: (all - warm) / (MEASURED * BATCH) });
    }
    return { rows };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
