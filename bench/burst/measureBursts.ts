import type { BenchContext } from "../measureAll";
import { runRawScenario, type RawResult } from "../rawScenario";
import { dropKeys } from "../redis/keys";
import type { BurstReport } from "../report/burstTable";
import { redisCpuSeconds } from "../redis/redisCpu";
import { capsOf } from "../scenarios";
import { runBurst, runBurstTwins, type BurstRow } from "./measureBurst";
import { burstRowsInYoungGen } from "./youngGen";

/** What the burst rows need of the run (they use no PostgreSQL) */
export type BurstContext = Omit<BenchContext, "pg">;

/**
 * The burst rows: each size on memory and Redis, with `burstCaps` caps, and
 * beside the Redis rows the raw redis-benchmark rate of a single claim of the
 * same caps (-P 1), measured in this run right before and right after each
 * (their mean: this box's speed drifts within a minute, and a rate measured
 * once at the start was 10-15 % off the rows measured later). Then the same
 * rows again in a Node started with a larger young generation (youngGen.ts),
 * which a burst's garbage makes worth its memory.
 */
export async function measureBursts(ctx: BurstContext): Promise<BurstReport[]> {
  const { settings, prefix, progress } = ctx;
  const caps = settings.burstCaps;
  const scenario = { name: `burst-raw-${caps}cap`, store: "redis" as const, rulesSource: "inline" as const, rules: capsOf(caps) };
  let raws = 0;
  const rawNow = (): Promise<RawResult> => {
    progress(`burst: redis-benchmark EVALSHA of one ${caps}-cap claim, ${settings.rawRequests} claims`);
    return runRawScenario(ctx.redis, ctx.endpoint, ctx.sha, scenario, settings, `${prefix}-burst-raw${raws++}`);
  };
  let before = await rawNow();
  const rows: BurstReport[] = [];
  await gateBurstRows(ctx, async (row) => {
    if (row.store !== "redis") {
      rows.push(row);
      return;
    }
    const after = await rawNow();
    rows.push(withRaw(row, before, after));
    before = after;
  });
  const young = await burstRowsInYoungGen(`${prefix}-yg`, progress);
  const after = await rawNow();
  for (const row of young) rows.push(row.store === "redis" ? withRaw(row, before, after) : row);
  return rows;
}

/** A Redis row with the raw rate measured right before and right after it. */
function withRaw(row: BurstRow, before: RawResult, after: RawResult): BurstReport {
  return {
    ...row,
    rawPerSec: (before.perSec + after.perSec) / 2,
    rawBeforePerSec: before.perSec,
    rawAfterPerSec: after.perSec,
    rawRedisCpuUsPerCall: (before.redisCpuUsPerCall + after.redisCpuUsPerCall) / 2,
  };
}

/** Each burst size on memory and Redis through this process's Node-RED; `measured` is told of each row as it is done. */
export async function gateBurstRows(ctx: Omit<BurstContext, "endpoint" | "sha">, measured?: (row: BurstRow) => Promise<void>): Promise<BurstRow[]> {
  const { settings, prefix, progress } = ctx;
  const caps = settings.burstCaps;
  const rows: BurstRow[] = [];
  const largest = Math.max(...settings.bursts);
  for (const msgs of settings.bursts) {
    for (const store of ["memory", "redis"] as const) {
      const keyPrefix = `${prefix}-burst-${store}-${msgs}`;
      const options = {
        store, caps, msgs, recipients: Math.max(1, Math.round(msgs / 2)), redisUrl: settings.redisUrl, keyPrefix, seed: settings.seed,
        ...(store === "redis" ? { redisCpu: () => redisCpuSeconds(ctx.redis) } : {}),
      };
      // the largest burst also with a decision history, in turns with its twin without: the history's cost is the pair's ratio
      const history = msgs === largest;
      progress(`burst: ${msgs} msgs in one tick into a ${store} gate, ${caps} caps${history ? ", in turns with a twin keeping a history of 10" : ""}`);
      const measuredRows = history ? await runBurstTwins(ctx.red, ctx.completions, options) : [await runBurst(ctx.red, ctx.completions, options)];
      if (store === "redis") await dropKeys(ctx.redis, keyPrefix);
      for (const row of measuredRows) {
        rows.push(row);
        await measured?.(row);
      }
    }
  }
  return rows;
}
