import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type Redis from "ioredis";
import type { InlineRule } from "../scenarios";
import type { RedisEndpoint } from "./endpoint";

const run = promisify(execFile);

/** redis-benchmark writes a fresh 12-digit number in 0..r-1 for every occurrence, on every call. */
const RAND = "__rand_int__";

export interface RawRun {
  /** the EVALSHA arguments after the command name */
  args: string[];
  requests: number;
  clients: number;
  /** -r: how many distinct recipients the keys are drawn from */
  keyspace: number;
}

/**
 * The arguments of one claim as the Redis store sends them (lua/caps/claim.lua:
 * numkeys 1, the recipient's counter hash `<prefix>:{<org>|<recipient>}:c`, the
 * limits table: per cap window ms, max, and 0, 0 for these rolling caps, 0 for
 * enforced; no histories; the send's entry tail; one shape, so no shape bytes;
 * the shape, per cap its field and limit), with a random recipient and member:
 * the tail is the last 6 bytes of the argument, here the last 6 digits of a
 * random 12-digit number (the script reads the tails at the argument's end):
 * a digest that differs between most claims of one recipient, as a messageId's
 * does, so a claim takes a new slot rather than finding one held.
 */
export function rawClaimArgs(sha: string, keyPrefix: string, rules: readonly InlineRule[]): string[] {
  const limits = rules.flatMap((rule) => [String(rule.window_seconds * 1000), String(rule.max_count), "0", "0", "0"]);
  const shape = rules.map((rule, i) => `,${rule.id},${i + 1}`).join("");
  return [sha, "1", `${keyPrefix}:{default|%2B1555${RAND}}:c`, String(rules.length), ...limits, "0", RAND, "", shape];
}

/** Calls the script once with the placeholders filled, so a wrong call fails here, not as N silent errors. */
export async function probeClaim(client: Redis, args: readonly string[], capCount: number): Promise<void> {
  const [sha, numKeys, ...rest] = args.map((a) => a.split(RAND).join("000000000000"));
  const reply = await client.evalsha(sha, numKeys, ...rest);
  // one text of integers: the time, then allowed with a new slot in every cap (FRESH, 2) and each cap's count; with the
  // probe's entry there already (a key left from an earlier run), allowed (1) and each cap's count, held and retry
  const numbers = typeof reply === "string" ? reply.split(",") : [];
  const allowed = (numbers.length === 2 + capCount && numbers[1] === "2") || (numbers.length === 2 + 3 * capCount && numbers[1] === "1");
  if (!allowed) throw new Error(`claim.lua probe answered ${JSON.stringify(reply)}`);
}

/** Runs redis-benchmark on EVALSHA and returns its requests per second. */
export async function redisBenchmarkEvalsha(endpoint: RedisEndpoint, raw: RawRun): Promise<number> {
  const argv = [
    "-h", endpoint.host, "-p", String(endpoint.port),
    ...(endpoint.password ? ["-a", endpoint.password] : []),
    "-n", String(raw.requests), "-c", String(raw.clients), "-P", "1", "-r", String(raw.keyspace),
    "--csv", "EVALSHA", ...raw.args,
  ];
  const { stdout, stderr } = await run("redis-benchmark", argv, { timeout: 300_000, maxBuffer: 1 << 20 });
  if (/error/i.test(stdout) || /error/i.test(stderr)) throw new Error(`redis-benchmark reported errors: ${(stderr || stdout).slice(0, 300)}`);
  return parseCsvRps(stdout);
}

/** `"test","rps",...` then one row per test; the rps of the (only) row. */
export function parseCsvRps(csv: string): number {
  const rows = csv.trim().split("\n").map((line) => line.trim()).filter((line) => line.startsWith('"'));
  const header = rows[0]?.split('","');
  const data = rows[rows.length - 1]?.split('","');
  const column = header?.indexOf("rps") ?? -1;
  if (!header || !data || rows.length < 2 || column < 0) throw new Error(`cannot read redis-benchmark --csv output: ${csv.slice(0, 200)}`);
  // the test name (first column) holds the command; count columns from the end, where the numbers are
  const rps = Number((data[data.length - (header.length - column)] ?? "").replace(/"/g, ""));
  if (!Number.isFinite(rps) || rps <= 0) throw new Error(`redis-benchmark rps is not a number: ${csv.slice(0, 200)}`);
  return rps;
}
