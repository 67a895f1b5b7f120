/** What one bench run does; every knob can be set from the environment. */
export interface BenchSettings {
  /** measured msgs per scenario */
  msgs: number;
  /** msgs sent (and not measured) before each scenario's measured run, to recipients of their own */
  warmup: number;
  /** msgs in flight at once */
  concurrency: number;
  /** distinct recipients the msgs are spread over */
  recipients: number;
  /** claims the raw redis-benchmark run makes per redis scenario */
  rawRequests: number;
  /** recipients the raw run draws from: as many claims per recipient as the gate's measured run */
  rawKeyspace: number;
  /** parallel redis-benchmark connections */
  rawClients: number;
  redisUrl: string;
  /** PostgreSQL of the `-pg` scenarios: the bench writes their rules there, and the cap-config reads them (its `pgUrl`) */
  databaseUrl: string;
  /** seed of the recipient choice, so two runs send the same msgs */
  seed: number;
  /** run only these scenarios (BENCH_SCENARIOS=memory-5cap,redis-5cap), e.g. under a profiler; `defer`, `defer-raw`, `defer-gate` name the defer rows, `burst` the burst rows, `campaign` the million-msg campaign rows, `adpath` the check / record rows, `core` the Redis-cost rows, `totals` the total-cap rows, `throughput` the throughput-gate's rows beside the delay node, `statefile` the memory store's save, `scale` the memory store at a million recipients */
  only?: string[];
  /** msgs deferred and released per defer row (the gate row sends each of its recipients two, so twice this many in all) */
  deferMsgs: number;
  /** msgs in flight in the defer rows (defer() calls, or msgs in the gate) */
  deferConcurrency: number;
  /** burst rows: msgs handed to the gate in one tick, one row per size and store (BENCH_BURSTS=10000,100000) */
  bursts: number[];
  /** caps of the burst rows */
  burstCaps: number;
  /** msgs of the campaign rows (BENCH_CAMPAIGN), even: each recipient gets two */
  campaign: number;
  /** the largest recipient count of the core scale rows (one claim each) */
  coreMillion: number;
  /** total-cap rows: claims on one hot total cap per row (BENCH_TOTAL_SENDS) */
  totalSends: number;
}

function sizes(name: string, fallback: number[]): number[] {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const values = text.split(",").map((s) => Number(s.trim()));
  if (!values.every((v) => Number.isInteger(v) && v >= 1)) throw new Error(`${name}: must be whole numbers >= 1, comma-separated, got ${JSON.stringify(text)}`);
  return values;
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
  // a young process stalls for JIT and GC now and then: a long warm-up keeps that out of p99
  const warmup = whole("BENCH_WARMUP", Math.max(1_000, Math.round(msgs / 2)), 0);
  const recipients = whole("BENCH_RECIPIENTS", 10_000, 1);
  // long enough to read a steady rate, however few msgs the gate ran
  const rawRequests = whole("BENCH_RAW_REQUESTS", Math.max(msgs, 50_000), 1);
  return {
    msgs,
    warmup,
    concurrency: whole("BENCH_CONCURRENCY", 64, 1),
    recipients,
    rawRequests,
    // the same claims per recipient as the gate's measured run, so counters fill (and refuse) alike
    rawKeyspace: Math.max(1, Math.round((recipients * rawRequests) / msgs)),
    rawClients: whole("BENCH_RAW_CLIENTS", 50, 1),
    redisUrl: process.env.REDIS_URL || "redis://127.0.0.1:6379",
    databaseUrl: process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test",
    seed: whole("BENCH_SEED", 20_240_601, 0),
    deferMsgs: whole("BENCH_DEFER_MSGS", 20_000, 1),
    deferConcurrency: whole("BENCH_DEFER_CONCURRENCY", 256, 1),
    bursts: sizes("BENCH_BURSTS", [10_000, 100_000]),
    burstCaps: whole("BENCH_BURST_CAPS", 3, 1),
    campaign: whole("BENCH_CAMPAIGN", 1_000_000, 2),
    coreMillion: whole("BENCH_CORE_MILLION", 1_000_000, 1),
    totalSends: whole("BENCH_TOTAL_SENDS", 100_000, 1),
    ...(process.env.BENCH_SCENARIOS ? { only: process.env.BENCH_SCENARIOS.split(",").map((s) => s.trim()).filter((s) => s !== "") } : {}),
  };
}
