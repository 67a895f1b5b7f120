import { ms, renderTable, whole } from "./markdown";
export interface Row {
  scenario: string;
  store: string;
  /** cap-config rulesSource: inline or postgres */
  rules: string;
  caps: number;
  msgsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** absent for stores that are not Redis */
  rawPerSec?: number;
  admittedShare: number;
  /** a postgres row: its msgs/s ÷ those of the inline row of the same store and caps, same run */
  vsInline?: number;
}

const HEADER = ["scenario", "store", "rules", "caps", "msgs/s through Node-RED", "p50 ms", "p99 ms", "raw Redis EVALSHA/s", "gate ÷ raw", "admitted", "pg ÷ inline msgs/s"];
const RIGHT = [false, false, false, true, true, true, true, true, true, true, true];


function cells(row: Row): string[] {
  return [
    row.scenario,
    row.store,
    row.rules,
    String(row.caps),
    whole.format(row.msgsPerSec),
    ms(row.p50Ms),
    ms(row.p99Ms),
    row.rawPerSec === undefined ? "—" : whole.format(row.rawPerSec),
    row.rawPerSec === undefined ? "—" : `${(row.msgsPerSec / row.rawPerSec).toFixed(2)}`,
    `${(row.admittedShare * 100).toFixed(1)} %`,
    row.vsInline === undefined ? "—" : row.vsInline.toFixed(2),
  ];
}

/** A markdown table, columns padded so it reads in a terminal too. */
export function markdownTable(rows: readonly Row[]): string {
  return renderTable(HEADER, RIGHT, rows.map(cells));
}
