import type { PacingRow, SkipRow } from "../throughput/measureThroughput";
import { ms, renderTable, whole } from "./markdown";

export function skipTable(rows: readonly SkipRow[]): string {
  return renderTable(
    ["throughput-gate skip", "msgs", "msgs/s", "allowed", "skipped", "fail_open"],
    [false, true, true, true, true, true],
    rows.map((r) => [`skip-${r.store}`, whole.format(r.msgs), whole.format(r.msgsPerSec), whole.format(r.allowed), whole.format(r.skipped), whole.format(r.failOpen)]),
  );
}

export function pacingTable(rows: readonly PacingRow[]): string {
  return renderTable(
    ["asked msgs/s", "who", "offered", "released", "released msgs/s", "p50 late ms", "p99 late ms (runs)", "p99 ÷ floor", "p99 while offered", "p99 after"],
    [true, false, true, true, true, true, true, true, true, true],
    rows.map((r) => [whole.format(r.rate), r.who, whole.format(r.offered), whole.format(r.released), whole.format(r.releasedPerSec), ms(r.p50Ms),
      ms(r.p99Ms) + (r.p99RangeMs ? ` (${ms(r.p99RangeMs[0])}–${ms(r.p99RangeMs[1])})` : ""),
      r.p99PerFloor === undefined ? "—" : `${r.p99PerFloor.toFixed(2)}×`,
      Number.isNaN(r.p99WhileOfferedMs) ? "—" : ms(r.p99WhileOfferedMs), Number.isNaN(r.p99AfterMs) ? "—" : ms(r.p99AfterMs)]),
  );
}
