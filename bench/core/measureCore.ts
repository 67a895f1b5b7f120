import Redis from "ioredis";
import { seededRandom } from "../load/random";
import type { BenchSettings } from "../settings";
import { chainedClaimer, coreClaimer, type Claimer, type Limit } from "./limiters";
import { OwnRedis } from "../../test/support/redisServer";
import { redisCost } from "./redisCost";
import { medianBy } from "../stats";

/** One measured run of a claimer. */
export interface CoreRun {
  claims: number;
  perSec: number;
  allowed: number;
  /** points taken by attempts that were refused (rate-limiter-flexible's chain) */
  leaked: number;
  /** recipients allowed more sends than the tightest cap lets through (an inexact limiter) */
  overCap: number;
  redisCpuUsPerClaim: number;
}

export interface CoreRows {
  redisVersion: string;
  /** the setting: 3 global caps of 5 per 10 min */
  equal: { core: CoreRun; chained: CoreRun };
  /** tiered caps, tightest last: where a chain leaks */
  tiered: { core: CoreRun; chained: CoreRun };
  /** INFO used_memory delta per (cap, recipient) holding 5 entries, 100,000 recipients × 3 caps */
  bytesPerCapRecipient: number;
  scale: { recipients: number; claimsPerRecipient: number; perSec: number; bytesPerCapRecipient: number }[];
}

const EQUAL: Limit[] = [
  { id: "a", max: 5, windowSeconds: 600 },
  { id: "b", max: 5, windowSeconds: 600 },
  { id: "c", max: 5, windowSeconds: 600 },
];

const TIERED: Limit[] = [
  { id: "day", max: 20, windowSeconds: 86_400 },
  { id: "hour", max: 10, windowSeconds: 3_600 },
  { id: "tenmin", max: 5, windowSeconds: 600 },
];

const IN_FLIGHT = 100;

/** `claims` attempts over `recipients` (seeded draw), `IN_FLIGHT` at once. */
async function run(claimer: Claimer, redis: Redis, recipients: readonly string[], claims: number, seed: number, tightest: number): Promise<CoreRun> {
  const random = seededRandom(seed);
  const allowedPer = new Map<string, number>();
  let issued = 0;
  let allowed = 0;
  let leaked = 0;
  const before = await redisCost(redis);
  const began = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (issued < claims) {
      const n = issued++;
      const recipient = recipients[Math.floor(random() * recipients.length)];
      const attempt = await claimer.claim(recipient, `m${seed}-${n}`);
      if (attempt.allowed) {
        allowed++;
        allowedPer.set(recipient, (allowedPer.get(recipient) ?? 0) + 1);
      }
      leaked += attempt.leaked;
    }
  }));
  const seconds = (performance.now() - began) / 1000;
  const after = await redisCost(redis);
  const overCap = [...allowedPer.values()].filter((n) => n > tightest).length;
  return { claims, perSec: claims / seconds, allowed, leaked, overCap, redisCpuUsPerClaim: (after.cpuUs - before.cpuUs) / claims };
}

function recipientsOf(count: number, tag: string): string[] {
  return Array.from({ length: count }, (_, i) => `+1${tag}${String(i).padStart(7, "0")}`);
}

/** Interleaved rounds of the core's claim and the chained limiters, the same attempts for both; the median round of each. */
async function compare(url: string, redis: Redis, limits: readonly Limit[], settings: BenchSettings, rounds: number, tag: string): Promise<{ core: CoreRun; chained: CoreRun }> {
  const recipients = recipientsOf(20_000, tag);
  const claims = Math.max(20_000, settings.msgs * 5);
  const cores: CoreRun[] = [];
  const chains: CoreRun[] = [];
  const tightest = Math.min(...limits.map((l) => l.max));
  // a first round of each, not measured, so the JIT has settled before either is timed
  for (const claimer of [coreClaimer(url, `core-${tag}-warm`, limits), chainedClaimer(redis, `rlf-${tag}-warm`, limits)]) {
    await run(claimer, redis, recipients, Math.min(claims, 20_000), settings.seed - 1, tightest);
    await claimer.close();
  }
  await redis.flushdb();
  for (let round = 0; round < rounds; round++) {
    const core = coreClaimer(url, `core-${tag}-${round}`, limits);
    cores.push(await run(core, redis, recipients, claims, settings.seed + round, tightest));
    await core.close();
    chains.push(await run(chainedClaimer(redis, `rlf-${tag}-${round}`, limits), redis, recipients, claims, settings.seed + round, tightest));
    await redis.flushdb();
  }
  return { core: medianBy(cores, (r) => r.perSec).median, chained: medianBy(chains, (r) => r.perSec).median };
}

/** Fills `recipients` with `perRecipient` claims each through the core, and reads the memory it took per (cap, recipient). */
async function fill(url: string, redis: Redis, recipients: number, perRecipient: number, tag: string): Promise<{ perSec: number; bytesPerCapRecipient: number }> {
  await redis.flushdb();
  const core = coreClaimer(url, `fill-${tag}`, EQUAL);
  const names = recipientsOf(recipients, tag);
  const before = await redisCost(redis);
  const began = performance.now();
  let next = 0;
  const total = recipients * perRecipient;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < total) {
      const n = next++;
      await core.claim(names[n % recipients], `f${n}`);
    }
  }));
  const seconds = (performance.now() - began) / 1000;
  await core.close();
  const after = await redisCost(redis);
  return { perSec: total / seconds, bytesPerCapRecipient: (after.memory - before.memory) / (recipients * EQUAL.length) };
}

/**
 * The core's Redis cost (issue 9): claims/s beside rate-limiter-flexible at the
 * same concurrency, Redis CPU per claim and memory per (cap, recipient), and
 * how both grow with the recipients. On a redis-server of the bench's own, so
 * INFO deltas are this run's alone.
 */
export async function measureCore(settings: BenchSettings, progress: (text: string) => void): Promise<CoreRows> {
  // the test suite's own-server support: a redis-server on a free loopback port, stopped by pid
  const server = new OwnRedis();
  await server.start();
  const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  try {
    const redisVersion = /redis_version:([\d.]+)/.exec(await redis.info("server"))?.[1] ?? "?";
    progress("core: 3 equal caps, the core's claim and 3 chained RateLimiterRedis, interleaved rounds");
    const equal = await compare(server.url, redis, EQUAL, settings, 3, "eq");
    progress("core: 3 tiered caps (tightest last), where a chain leaks");
    const tiered = await compare(server.url, redis, TIERED, settings, 1, "ti");
    progress("core: memory of 100,000 recipients × 3 caps × 5 entries");
    const hundredK = await fill(server.url, redis, 100_000, 5, "m");
    progress("core: 1,000 recipients × 5 claims");
    const oneK = await fill(server.url, redis, 1_000, 5, "k");
    progress("core: 1,000,000 recipients × 1 claim");
    const oneM = await fill(server.url, redis, settings.coreMillion, 1, "M");
    await redis.flushdb();
    return {
      redisVersion, equal, tiered, bytesPerCapRecipient: hundredK.bytesPerCapRecipient,
      scale: [
        { recipients: 1_000, claimsPerRecipient: 5, ...oneK },
        { recipients: 100_000, claimsPerRecipient: 5, ...hundredK },
        { recipients: settings.coreMillion, claimsPerRecipient: 1, ...oneM },
      ],
    };
  } finally {
    redis.disconnect();
    await server.stop();
    server.cleanUp();
  }
}
