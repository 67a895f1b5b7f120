import type { PostgresRules } from "../src/postgres/postgresRules";
import type { CapConfigNode } from "../src/nodes/gate/capConfigNode";
import { collectGarbage } from "../test/support/gc";
import { drive } from "./load/driver";
import type { Completions } from "./load/completions";
import { MsgSource } from "./load/msgSource";
import { probeUntilCapped, type ProbeResult } from "./load/probe";
import type { Verdicts } from "./load/verdicts";
import { deployGate } from "./nodeRed/deploy";
import type { EmbeddedRed } from "./nodeRed/embeddedRed";
import { gateFlow } from "./nodeRed/gateFlow";
import { RULES_TABLE, type BenchPg } from "./pg/rulesSchema";
import { CHANNEL, ORG, type Scenario } from "./scenarios";
import type { BenchSettings } from "./settings";
import { summarize } from "./stats";

export interface GateResult {
  msgsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  measured: Verdicts;
  warmup: Verdicts;
  probe: ProbeResult;
  /** postgres rules: rule-list queries the cap-config sent to PostgreSQL during the measured run */
  ruleLoads?: number;
}

/** cap-config timeoutMs: far above any claim here, so none fails open for being slow */
const CLAIM_TIMEOUT_MS = 1000;

/** The schema a postgres scenario's rules live in: its key prefix with `_` for `-` (`sgbench_<hex>_redis_3cap_pg`). */
export function schemaOf(keyPrefix: string): string {
  return keyPrefix.replace(/-/g, "_");
}

/**
 * Deploys the scenario's flow, waits until a probe msg is admitted through its
 * caps, warms it up, then measures `settings.msgs` claims through the gate.
 * A postgres scenario gets a schema of its own: created empty before the
 * deploy, migrated by the cap-config, filled with the caps, dropped at the end.
 */
export async function runGateScenario(
  red: EmbeddedRed,
  completions: Completions,
  scenario: Scenario,
  settings: BenchSettings,
  keyPrefix: string,
  pg?: BenchPg,
): Promise<GateResult> {
  if (scenario.rulesSource !== "postgres") return measure(red, completions, scenario, settings, keyPrefix);
  if (!pg) throw new Error(`${scenario.name}: no PostgreSQL connection`);
  const schema = schemaOf(keyPrefix);
  await pg.createSchema(schema);
  try {
    return await measure(red, completions, scenario, settings, keyPrefix, { pg, schema });
  } finally {
    await pg.dropSchema(schema);
  }
}

async function measure(
  red: EmbeddedRed,
  completions: Completions,
  scenario: Scenario,
  settings: BenchSettings,
  keyPrefix: string,
  pgRules?: { pg: BenchPg; schema: string },
): Promise<GateResult> {
  const flow = gateFlow(scenario, keyPrefix, {
    keyPrefix,
    redisUrl: settings.redisUrl,
    timeoutMs: CLAIM_TIMEOUT_MS,
    ...(pgRules ? { pg: { url: settings.databaseUrl, table: `${pgRules.schema}.${RULES_TABLE}` } } : {}),
  });
  const { gate, config } = await deployGate(red, flow);
  // the previous flow's nodes and store are closed now: clear their garbage before timing anything
  collectGarbage();
  if (pgRules) {
    // no msg before the rows are in: a rule list read earlier would be cached (empty) for 30 s
    await pgRules.pg.waitForTable(pgRules.schema);
    await pgRules.pg.insertRules(pgRules.schema, ORG, scenario.rules);
  }
  const capIds = new Set(scenario.rules.map((rule) => rule.id));
  const probe = await probeUntilCapped(gate, completions, { tag: `${keyPrefix}-p`, channel: CHANNEL, capIds });
  const { recipients, seed, concurrency } = settings;
  // warm-up recipients of their own: however long it runs, the measured counters start empty
  const warmSource = new MsgSource({ tag: `${keyPrefix}-w`, recipients, recipientPrefix: "+1666", channel: CHANNEL, seed: seed + 1 });
  // the same seed for every scenario: each measures the same recipients in the same order
  const source = new MsgSource({ tag: `${keyPrefix}-m`, recipients, recipientPrefix: "+1555", channel: CHANNEL, seed });
  const warm = await drive(gate, completions, warmSource, { count: settings.warmup, concurrency, capIds });
  const loadsBefore = pgRules ? ruleLoadCount(config) : 0;
  const run = await drive(gate, completions, source, { count: settings.msgs, concurrency, capIds });
  const ruleLoads = pgRules ? ruleLoadCount(config) - loadsBefore : undefined;
  const { p50, p99 } = summarize(run.latenciesMs);
  return {
    msgsPerSec: run.msgs / (run.elapsedMs / 1000),
    p50Ms: p50,
    p99Ms: p99,
    measured: run.verdicts,
    warmup: warm.verdicts,
    probe,
    ...(ruleLoads !== undefined ? { ruleLoads } : {}),
  };
}

/** Rule-list queries the cap-config's PostgreSQL rules have sent so far. */
function ruleLoadCount(config: CapConfigNode): number {
  const rules = config.service?.rules;
  if (rules?.source !== "postgres") throw new Error("cap-config does not read its rules from PostgreSQL");
  return (rules as PostgresRules).ruleSource.repository.loadCount;
}
