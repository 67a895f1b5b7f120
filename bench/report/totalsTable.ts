import type { TotalsRows, TotalsRun } from "../totals/measureTotals";
import { renderTable, whole } from "./markdown";

const HEADER = ["claim of one hot total cap", "in flight", "sends", "admitted", "claims/s", "÷ one round trip per send", "script calls per 1,000 admitted", "Redis commands per 1,000 admitted", "Node CPU µs/claim"];
const RIGHT = [false, true, true, true, true, true, true, true, true];

function line(run: TotalsRun, other?: TotalsRun): string[] {
  return [
    run.name, run.inFlight === "all" ? "all (a burst)" : String(run.inFlight), whole.format(run.sends), whole.format(run.admitted), whole.format(run.perSec),
    other ? (run.perSec / other.perSec).toFixed(1) : "—", run.callsPer1000.toFixed(1), run.commandsPer1000.toFixed(1), run.nodeCpuUsPerClaim.toFixed(1),
  ];
}

/** Leased blocks beside one round trip per send, at each in-flight bound. */
export function totalsTable(rows: TotalsRows): string {
  const body: string[][] = [];
  for (let i = 0; i + 1 < rows.runs.length; i += 2) {
    const leased = rows.runs[i];
    const each = rows.runs[i + 1];
    body.push(line(leased, each), line(each));
  }
  return renderTable(HEADER, RIGHT, body);
}
