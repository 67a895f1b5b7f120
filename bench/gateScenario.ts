import { drive } from "./load/driver";
import type { Completions } from "./load/completions";
import { MsgSource } from "./load/msgSource";
import type { Verdicts } from "./load/verdicts";
import { deployGate } from "./nodeRed/deploy";
import type { EmbeddedRed } from "./nodeRed/embeddedRed";
import { gateFlow } from "./nodeRed/gateFlow";
import { CHANNEL, type Scenario } from "./scenarios";
import type { BenchSettings } from "./settings";
import { summarize } from "./stats";

export interface GateResult {
  msgsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  measured: Verdicts;
  warmup: Verdicts;
}

/** cap-config timeoutMs: far above any claim here, so none fails open for being slow */
const CLAIM_TIMEOUT_MS = 1000;

/** Deploys the scenario's flow, warms it up, then measures `settings.msgs` claims through the gate. */
export async function runGateScenario(
  red: EmbeddedRed,
  completions: Completions,
  scenario: Scenario,
  settings: BenchSettings,
  keyPrefix: string,
): Promise<GateResult> {
  const flow = gateFlow(scenario, scenario.name, { keyPrefix, redisUrl: settings.redisUrl, timeoutMs: CLAIM_TIMEOUT_MS });
  const { gate } = await deployGate(red, flow);
  // the same seed for every scenario: each sees the same recipients in the same order
  const source = new MsgSource(`${keyPrefix}-m`, settings.recipients, CHANNEL, settings.seed);
  const warm = await drive(gate, completions, source, { count: settings.warmup, concurrency: settings.concurrency });
  const run = await drive(gate, completions, source, { count: settings.msgs, concurrency: settings.concurrency });
  const { p50, p99 } = summarize(run.latenciesMs);
  return {
    msgsPerSec: run.msgs / (run.elapsedMs / 1000),
    p50Ms: p50,
    p99Ms: p99,
    measured: run.verdicts,
    warmup: warm.verdicts,
  };
}
