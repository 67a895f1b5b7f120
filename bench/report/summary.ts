import type { Verdicts } from "../load/verdicts";
import type { Machine } from "../machine";
import type { BenchSettings } from "../settings";

const n = new Intl.NumberFormat("en-US");

export function machineLine(machine: Machine): string {
  return `machine: ${machine.cpuCount} × ${machine.cpuModel} · Node ${machine.node} · Node-RED ${machine.nodeRed} · Redis ${machine.redis}`;
}

export function loadLine(settings: BenchSettings): string {
  return `load: ${n.format(settings.msgs)} msgs per scenario over ${n.format(settings.recipients)} recipients, `
    + `after ${n.format(settings.warmup)} warm-up msgs to other recipients, ${settings.concurrency} in flight; `
    + `raw: redis-benchmark -n ${settings.rawRequests} -c ${settings.rawClients} -P 1 -r ${settings.rawKeyspace} EVALSHA <claim.lua sha> <same keys and args>`;
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
