/** What one bench run does; every knob can be set from the environment. */
export interface BenchSettings {
  /** measured msgs per scenario */
  msgs: number;
  /** msgs sent (and not measured) before each scenario's measured run */
  warmup: number;
  /** msgs in flight at once */
  concurrency: number;
  /** distinct recipients the msgs are spread over */
  recipients: number;
  /** claims the raw redis-benchmark run makes per redis scenario */
  rawRequests: number;
  /** parallel redis-benchmark connections */
  rawClients: number;
  redisUrl: string;
  /** seed of the recipient choice, so two runs send the same msgs */
  seed: number;
}

function whole(name: string, fallback: number, min: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name}: must be a whole number >= ${min}, got ${JSON.stringify(text)}`);
  return value;
}

export function readSettings(): BenchSettings {
  const msgs = whole("BENCH_MSGS", 20_000, 1);
  const warmup = whole("BENCH_WARMUP", Math.min(5_000, Math.max(500, Math.round(msgs / 10))), 0);
  return {
    msgs,
    warmup,
    concurrency: whole("BENCH_CONCURRENCY", 64, 1),
    recipients: whole("BENCH_RECIPIENTS", 10_000, 1),
    // as many claims as the gate made, over the same key space: the counters fill alike
    rawRequests: whole("BENCH_RAW_REQUESTS", msgs + warmup, 1),
    rawClients: whole("BENCH_RAW_CLIENTS", 50, 1),
    redisUrl: process.env.REDIS_URL || "redis://127.0.0.1:6379",
    seed: whole("BENCH_SEED", 20_240_601, 0),
  };
}
