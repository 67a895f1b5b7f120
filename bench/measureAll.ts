import type Redis from "ioredis";
import { runGateScenario } from "./gateScenario";
import type { Completions } from "./load/completions";
import type { EmbeddedRed } from "./nodeRed/embeddedRed";
import type { BenchPg } from "./pg/rulesSchema";
import { runRawScenario } from "./rawScenario";
import type { RedisEndpoint } from "./redis/endpoint";
import { countKeys, dropKeys } from "./redis/keys";
import type { PgComparison, ScenarioVerdicts } from "./report/summary";
import type { Row } from "./report/table";
import { inlineTwinName, type Scenario } from "./scenarios";
import type { BenchSettings } from "./settings";

export interface BenchContext {
  red: EmbeddedRed;
  completions: Completions;
  redis: Redis;
  endpoint: RedisEndpoint;
  /** SHA of lua/caps/claim.lua, loaded */
  sha: string;
  settings: BenchSettings;
  /** every key of this run starts with it */
  prefix: string;
  /** present when a postgres scenario is on the list */
  pg?: BenchPg;
  progress: (text: string) => void;
}

export interface Measured {
  rows: Row[];
  verdicts: ScenarioVerdicts[];
  /** each postgres row against its inline twin of the same run */
  comparisons: PgComparison[];
}

/** Runs every scenario through the gate and, beside each redis one, redis-benchmark on the same script. */
export async function measureAll(ctx: BenchContext, list: readonly Scenario[]): Promise<Measured> {
  const { settings, prefix, progress } = ctx;
  const rows: Row[] = [];
  const verdicts: ScenarioVerdicts[] = [];
  const comparisons: PgComparison[] = [];
  const first = list[0];
  if (first) {
    // a young process pauses for JIT and heap growth: one unreported pass keeps that off the first row
    progress(`${first.name}: unreported pass to warm the process`);
    const pass = await runGateScenario(ctx.red, ctx.completions, first, settings, `${prefix}-prewarm`, ctx.pg);
    verdicts.push({ scenario: `${first.name} (unreported pass)`, measured: pass.measured, warmup: pass.warmup });
    await dropKeys(ctx.redis, `${prefix}-prewarm`);
  }
  for (const scenario of list) {
    const caps = scenario.rules.length;
    const gatePrefix = `${prefix}-${scenario.name}`;
    progress(`${scenario.name}: ${settings.warmup} warm-up + ${settings.msgs} msgs through the gate`);
    const gate = await runGateScenario(ctx.red, ctx.completions, scenario, settings, gatePrefix, ctx.pg);
    if (gate.probe.failedOpen > 0) progress(`${scenario.name}: ${gate.probe.failedOpen} probe msg(s) failed open before the caps were in force (not measured)`);
    verdicts.push({ scenario: scenario.name, measured: gate.measured, warmup: gate.warmup });
    let rawPerSec: number | undefined;
    if (scenario.store === "redis") {
      if ((await countKeys(ctx.redis, gatePrefix)) === 0) throw new Error(`${scenario.name}: the gate wrote no key under ${gatePrefix}`);
      await dropKeys(ctx.redis, gatePrefix);
      progress(`${scenario.name}: redis-benchmark EVALSHA, ${settings.rawRequests} claims`);
      rawPerSec = (await runRawScenario(ctx.redis, ctx.endpoint, ctx.sha, scenario, settings, `${prefix}-raw-${caps}cap`)).perSec;
    }
    const m = gate.measured;
    const twinName = inlineTwinName(scenario);
    const twin = twinName === undefined ? undefined : rows.find((r) => r.scenario === twinName);
    if (twinName !== undefined) {
      comparisons.push({
        scenario: scenario.name,
        store: scenario.store,
        caps,
        ...(twin ? { msgsPerSec: gate.msgsPerSec / twin.msgsPerSec, p50: gate.p50Ms / twin.p50Ms, p99: gate.p99Ms / twin.p99Ms } : {}),
        ruleLoads: gate.ruleLoads ?? 0,
        probeFailedOpen: gate.probe.failedOpen,
      });
    }
    rows.push({
      scenario: scenario.name,
      store: scenario.store,
      rules: scenario.rulesSource,
      caps,
      msgsPerSec: gate.msgsPerSec,
      p50Ms: gate.p50Ms,
      p99Ms: gate.p99Ms,
      ...(rawPerSec !== undefined ? { rawPerSec } : {}),
      admittedShare: m.allowed / (m.allowed + m.skipped + m.errors),
      ...(twin ? { vsInline: gate.msgsPerSec / twin.msgsPerSec } : {}),
    });
  }
  return { rows, verdicts, comparisons };
}
