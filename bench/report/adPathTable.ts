import type { AdPathRow } from "../adPath/measureAdPath";
import { ms, renderTable, whole } from "./markdown";

const HEADER = ["ad path", "how", "requests/s", "p50 ms", "p99 ms (lowest–highest)", "p99 ÷ floor", "Node CPU µs/request", "raw EVALSHA/s", "÷ raw", "fail_open"];
const RIGHT = [false, false, true, true, true, true, true, true, true, true];

function cells(row: AdPathRow): string[] {
  return [
    row.path,
    row.how,
    whole.format(row.perSec),
    row.p50Ms === undefined ? "—" : ms(row.p50Ms),
    row.p99Ms === undefined ? "—" : ms(row.p99Ms) + (row.p99RangeMs ? ` (${ms(row.p99RangeMs[0])}–${ms(row.p99RangeMs[1])})` : ""),
    row.p99OverFloor === undefined ? "—" : row.p99OverFloor.toFixed(2),
    row.nodeCpuUs === undefined ? "—" : row.nodeCpuUs.toFixed(0) + (row.nodeCpuRangeUs ? ` (${row.nodeCpuRangeUs[0].toFixed(0)}–${row.nodeCpuRangeUs[1].toFixed(0)})` : ""),
    whole.format(row.rawPerSec),
    (row.perSec / row.rawPerSec).toFixed(2),
    whole.format(row.failOpen),
  ];
}

export function adPathTable(rows: readonly AdPathRow[]): string {
  return renderTable(HEADER, RIGHT, rows.map(cells));
}
