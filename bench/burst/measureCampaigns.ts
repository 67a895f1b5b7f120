import type { BenchContext } from "../measureAll";
import { runRawScenario, type RawResult } from "../rawScenario";
import { dropKeys } from "../redis/keys";
import { CAMPAIGN_CAP, runCampaign, type CampaignResult } from "./campaign";

export interface CampaignRow extends CampaignResult {
  store: "memory" | "redis";
  /** Redis rows: redis-benchmark EVALSHA of the same one-cap claim, right before and right after the row */
  rawBeforePerSec?: number;
  rawAfterPerSec?: number;
}

/** What the campaign rows need of the run: what the burst rows need (a run without PostgreSQL) */
export type CampaignContext = Omit<BenchContext, "pg">;

/**
 * The campaign rows: `settings.campaign` msgs in one tick into a gate whose
 * cap-config keeps every default, on memory and on Redis (campaign.ts), each
 * after an unmeasured tenth to other recipients; beside the Redis row the raw
 * EVALSHA rate of the same one-cap claim, measured right before and after it.
 */
export async function measureCampaigns(ctx: CampaignContext): Promise<CampaignRow[]> {
  const { settings, prefix, progress } = ctx;
  const msgs = settings.campaign;
  const rows: CampaignRow[] = [];
  for (const store of ["memory", "redis"] as const) {
    const keyPrefix = `${prefix}-campaign-${store}`;
    let before: RawResult | undefined;
    const raw = (n: number): Promise<RawResult> => {
      progress(`campaign: redis-benchmark EVALSHA of one 1-cap claim (${n === 0 ? "before" : "after"})`);
      return runRawScenario(ctx.redis, ctx.endpoint, ctx.sha, { name: "campaign-raw", store: "redis", rulesSource: "inline", rules: [CAMPAIGN_CAP] }, settings, `${prefix}-campaign-raw${n}`);
    };
    if (store === "redis") before = await raw(0);
    progress(`campaign: ${msgs} msgs in one tick into a ${store} gate, every cap-config default`);
    const result = await runCampaign(ctx.red, ctx.completions, {
      store: store === "redis" ? { store, redisUrl: settings.redisUrl } : { store }, keyPrefix, msgs, warmUp: Math.max(2, Math.round(msgs / 10 / 2) * 2),
    });
    if (store === "redis") {
      await dropKeys(ctx.redis, keyPrefix);
      const after = await raw(1);
      rows.push({ ...result, store, rawBeforePerSec: (before as RawResult).perSec, rawAfterPerSec: after.perSec });
    } else {
      rows.push({ ...result, store });
    }
  }
  return rows;
}
