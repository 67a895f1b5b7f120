import type Redis from "ioredis";
import type { Completions } from "../load/completions";
import type { EmbeddedRed } from "../nodeRed/embeddedRed";
import { runRawScenario } from "../rawScenario";
import type { RedisEndpoint } from "../redis/endpoint";
import { dropKeys } from "../redis/keys";
import type { BurstReport } from "../report/burstTable";
import { redisCpuSeconds } from "../redis/redisCpu";
import { capsOf } from "../scenarios";
import type { BenchSettings } from "../settings";
import { runBurst, type BurstRow } from "./measureBurst";
import { burstRowsInYoungGen } from "./youngGen";

export interface BurstContext {
  red: EmbeddedRed;
  completions: Completions;
  redis: Redis;
  endpoint: RedisEndpoint;
  sha: string;
  settings: BenchSettings;
  prefix: string;
  progress: (text: string) => void;
}

/**
 * The burst rows: each size on memory and Redis, with `burstCaps` caps, and
 * beside the Redis rows the raw redis-benchmark rate of a single claim of the
 * same caps (-P 1), measured in this run. Then the same rows again in a Node
 * started with a larger young generation (youngGen.ts), which a burst's
 * garbage makes worth its memory.
 */
export async function measureBursts(ctx: BurstContext): Promise<BurstReport[]> {
  const { settings, prefix, progress } = ctx;
  const caps = settings.burstCaps;
  progress(`burst: redis-benchmark EVALSHA of one ${caps}-cap claim, ${settings.rawRequests} claims`);
  const scenario = { name: `burst-raw-${caps}cap`, store: "redis" as const, rulesSource: "inline" as const, rules: capsOf(caps) };
  const raw = await runRawScenario(ctx.redis, ctx.endpoint, ctx.sha, scenario, settings, `${prefix}-burst-raw`);
  const rows = [...await gateBurstRows(ctx), ...await burstRowsInYoungGen(`${prefix}-yg`, progress)];
  return rows.map((row) => (row.store === "redis" ? { ...row, rawPerSec: raw.perSec, rawRedisCpuUsPerCall: raw.redisCpuUsPerCall } : row));
}

/** Each burst size on memory and Redis through this process's Node-RED. */
export async function gateBurstRows(ctx: Omit<BurstContext, "endpoint" | "sha">): Promise<BurstRow[]> {
  const { settings, prefix, progress } = ctx;
  const caps = settings.burstCaps;
  const rows: BurstRow[] = [];
  for (const msgs of settings.bursts) {
    for (const store of ["memory", "redis"] as const) {
      const keyPrefix = `${prefix}-burst-${store}-${msgs}`;
      progress(`burst: ${msgs} msgs in one tick into a ${store} gate, ${caps} caps`);
      rows.push(await runBurst(ctx.red, ctx.completions, {
        store, caps, msgs, recipients: Math.max(1, Math.round(msgs / 2)), redisUrl: settings.redisUrl, keyPrefix, seed: settings.seed,
        ...(store === "redis" ? { redisCpu: () => redisCpuSeconds(ctx.redis) } : {}),
      }));
      if (store === "redis") await dropKeys(ctx.redis, keyPrefix);
    }
  }
  return rows;
}
