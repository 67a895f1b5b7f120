import type { BurstRow } from "../burst/measureBurst";
import { ms, renderTable, whole } from "./markdown";

/** A burst row with the raw EVALSHA rate of one claim of the same caps, measured in the same run. */
export interface BurstReport extends BurstRow {
  /** the mean of the rates measured right before and right after the row */
  rawPerSec?: number;
  rawBeforePerSec?: number;
  rawAfterPerSec?: number;
  /** Redis's CPU per call of that raw run, µs */
  rawRedisCpuUsPerCall?: number;
}

const HEADER = ["burst", "store", "caps", "msgs", "drain ms", "msgs/s", "slowest–fastest", "first burst msgs/s", "raw EVALSHA/s", "raw before, after", "÷ raw", "Node CPU µs/msg", "Redis CPU µs/msg", "allowed", "skipped", "fail_open", "overloaded", "errors", "peak heap MB"];
const RIGHT = [false, false, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];

/** e.g. burst-redis-3cap-100k, -ss64 when measured with a 64 MB semi-space, -hist10 with historySize 10 */
export function burstName(row: BurstRow): string {
  return `burst-${row.store}-${row.caps}cap-${row.msgs / 1000}k${row.youngGenMb === undefined ? "" : `-ss${row.youngGenMb}`}${row.history ? "-hist10" : ""}`;
}

function cells(row: BurstReport): string[] {
  const v = row.verdicts;
  return [
    burstName(row),
    row.store,
    String(row.caps),
    whole.format(row.msgs),
    ms(row.drainMs),
    whole.format(row.msgsPerSec),
    `${whole.format(row.minPerSec)}–${whole.format(row.maxPerSec)}`,
    whole.format(row.firstBurstPerSec),
    row.rawPerSec === undefined ? "—" : whole.format(row.rawPerSec),
    row.rawBeforePerSec === undefined || row.rawAfterPerSec === undefined ? "—" : `${whole.format(row.rawBeforePerSec)}, ${whole.format(row.rawAfterPerSec)}`,
    row.rawPerSec === undefined ? "—" : (row.msgsPerSec / row.rawPerSec).toFixed(2),
    row.nodeCpuUsPerMsg.toFixed(1),
    row.redisCpuUsPerMsg === undefined ? "—" : row.redisCpuUsPerMsg.toFixed(1),
    whole.format(v.allowed),
    whole.format(v.skipped),
    whole.format(v.failOpen),
    whole.format(v.overloaded),
    whole.format(v.errors),
    whole.format(row.peakHeapMb),
  ];
}

export function burstTable(rows: readonly BurstReport[]): string {
  return renderTable(HEADER, RIGHT, rows.map(cells));
}

/** What the decision history costs a burst: each -hist10 row beside its twin without, msgs/s and CPU per msg. */
export function historyCostLines(rows: readonly BurstReport[]): string[] {
  const lines: string[] = [];
  for (const on of rows) {
    if (!on.history) continue;
    const off = rows.find((r) => !r.history && r.store === on.store && r.caps === on.caps && r.msgs === on.msgs && r.youngGenMb === on.youngGenMb);
    if (!off) continue;
    const cost = (1 - on.msgsPerSec / off.msgsPerSec) * 100;
    const redis = on.redisCpuUsPerMsg !== undefined && off.redisCpuUsPerMsg !== undefined ? `, Redis CPU ${off.redisCpuUsPerMsg.toFixed(1)} → ${on.redisCpuUsPerMsg.toFixed(1)} µs/msg` : "";
    lines.push(`decision history on ${burstName(on)}: ${whole.format(off.msgsPerSec)} → ${whole.format(on.msgsPerSec)} msgs/s (${cost >= 0 ? "costs" : "gains"} ${Math.abs(cost).toFixed(1)} %), `
      + `Node CPU ${off.nodeCpuUsPerMsg.toFixed(1)} → ${on.nodeCpuUsPerMsg.toFixed(1)} µs/msg${redis}`);
  }
  return lines;
}
