import { deferWarmup } from "../defer/measureDefer";
import type { Verdicts } from "../load/verdicts";
import type { Machine } from "../machine";
import type { BenchSettings } from "../settings";

const n = new Intl.NumberFormat("en-US");

/** `stolen`: the share of CPU time the hypervisor took during the run (0..1), when the machine says */
export function machineLine(machine: Machine, postgres?: string, stolen?: number): string {
  return `machine: ${machine.cpuCount} × ${machine.cpuModel} · Node ${machine.node} · Node-RED ${machine.nodeRed} · Redis ${machine.redis}`
    + (postgres ? ` · PostgreSQL ${postgres}` : "")
    + (stolen !== undefined ? ` · CPU stolen by the hypervisor during the run: ${(stolen * 100).toFixed(1)} %` : "");
}

export function loadLine(settings: BenchSettings): string {
  return `load: ${n.format(settings.msgs)} msgs per scenario over ${n.format(settings.recipients)} recipients, `
    + `after ${n.format(settings.warmup)} warm-up msgs to other recipients, ${settings.concurrency} in flight; `
    + `raw: redis-benchmark -n ${settings.rawRequests} -c ${settings.rawClients} -P 1 -r ${settings.rawKeyspace} EVALSHA <claim.lua sha> <same keys and args>`;
}

export function deferLoadLine(settings: BenchSettings): string {
  return `defer: msgs held in and released from a cap-config's durable queue on Redis (lua/defer_put, defer_take, defer_ack); `
    + `${n.format(settings.deferMsgs)} msgs per row after an unreported ${n.format(deferWarmup(settings))}, ${settings.deferConcurrency} in flight; `
    + `gate row: cap { max_count: 1, window_seconds: 1, disposition: "defer" }, each recipient sent 2 msgs, the 2nd held until its slot frees, released/s paced by those due times`;
}

export interface ScenarioVerdicts {
  scenario: string;
  measured: Verdicts;
  warmup: Verdicts;
}

/** One line when all is well; else one per scenario that failed open or errored. */
export function verdictLines(all: readonly ScenarioVerdicts[]): string[] {
  const msgs = all.reduce((sum, s) => sum + total(s.measured) + total(s.warmup), 0);
  const failOpen = all.reduce((sum, s) => sum + s.measured.failOpen + s.warmup.failOpen, 0);
  const errors = all.reduce((sum, s) => sum + s.measured.errors + s.warmup.errors, 0);
  const lines = [`fail_open verdicts: ${failOpen}, gate errors: ${errors} (of ${n.format(msgs)} msgs, warm-up included)`];
  for (const s of all) {
    const f = s.measured.failOpen + s.warmup.failOpen;
    const e = s.measured.errors + s.warmup.errors;
    if (f === 0 && e === 0) continue;
    const why = s.measured.firstError ?? s.warmup.firstError;
    lines.push(`  ${s.scenario}: ${f} fail_open, ${e} errors${why ? ` (first: ${why})` : ""}`);
  }
  return lines;
}

function total(v: Verdicts): number {
  return v.allowed + v.skipped + v.errors;
}

/** A postgres row against the inline row of the same store and caps, measured in the same run. */
export interface PgComparison {
  scenario: string;
  store: string;
  caps: number;
  /** pg ÷ inline; absent when the inline twin was not run (BENCH_SCENARIOS) */
  msgsPerSec?: number;
  p50?: number;
  p99?: number;
  /** rule-list queries sent to PostgreSQL during the measured run (the cache answers the rest) */
  ruleLoads: number;
  /** probe msgs that failed open before the caps were in force; never part of warm-up or the measured run */
  probeFailedOpen: number;
}

/** One line per postgres row: how it compares with its inline twin of this run. */
export function comparisonLines(all: readonly PgComparison[]): string[] {
  return all.map((c) => {
    const head = `pg ÷ inline, ${c.store} ${c.caps} caps (${c.scenario} ÷ ${c.store}-${c.caps}cap, same run): `;
    const ratios = c.msgsPerSec === undefined || c.p50 === undefined || c.p99 === undefined
      ? `— (${c.store}-${c.caps}cap not run)`
      : `msgs/s ${c.msgsPerSec.toFixed(2)} · p50 ${c.p50.toFixed(2)} · p99 ${c.p99.toFixed(2)}`;
    return `${head}${ratios}; rule queries to PostgreSQL while measuring: ${c.ruleLoads}; probe msgs failed open before the rules loaded: ${c.probeFailedOpen}`;
  });
}
