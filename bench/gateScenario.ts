import { collectGarbage } from "./gc";
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
  const flow = gateFlow(scenario, keyPrefix, { keyPrefix, redisUrl: settings.redisUrl, timeoutMs: CLAIM_TIMEOUT_MS });
  const { gate } = await deployGate(red, flow);
  // the previous flow's nodes and store are closed now: clear their garbage before timing anything
  collectGarbage();
  const { recipients, seed, concurrency } = settings;
  // warm-up recipients of their own: however long it runs, the measured counters start empty
  const warmSource = new MsgSource({ tag: `${keyPrefix}-w`, recipients, recipientPrefix: "+1666", channel: CHANNEL, seed: seed + 1 });
  // the same seed for every scenario: each measures the same recipients in the same order
  const source = new MsgSource({ tag: `${keyPrefix}-m`, recipients, recipientPrefix: "+1555", channel: CHANNEL, seed });
  const warm = await drive(gate, completions, warmSource, { count: settings.warmup, concurrency });
  const run = await drive(gate, completions, source, { count: settings.msgs, concurrency });
  const { p50, p99 } = summarize(run.latenciesMs);
  return {
    msgsPerSec: run.msgs / (run.elapsedMs / 1000),
    p50Ms: p50,
    p99Ms: p99,
    measured: run.verdicts,
    warmup: warm.verdicts,
  };
}
