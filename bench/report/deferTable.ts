import { ms, renderTable, whole } from "./markdown";
/** One row of the defer table: msgs held in and released from a cap-config's durable queue. */
export interface DeferRow {
  path: string;
  /** msgs deferred, and released */
  msgs: number;
  deferredPerSec: number;
  releasedPerSec: number;
  /** release time − the admission's release_at; absent where every msg was due before the drain began */
  latenessP50Ms?: number;
  latenessP99Ms?: number;
  /** how the row was run */
  note: string;
}

const HEADER = ["path", "msgs", "deferred/s", "released/s", "release lateness p50 / p99 ms", "how"];
const RIGHT = [false, true, true, true, true, false];


function cells(row: DeferRow): string[] {
  return [
    row.path,
    whole.format(row.msgs),
    whole.format(row.deferredPerSec),
    whole.format(row.releasedPerSec),
    row.latenessP50Ms === undefined || row.latenessP99Ms === undefined ? "—" : `${ms(row.latenessP50Ms)} / ${ms(row.latenessP99Ms)}`,
    row.note,
  ];
}

/** The defer rows as a markdown table, padded like the main one. */
export function deferTable(rows: readonly DeferRow[]): string {
  return renderTable(HEADER, RIGHT, rows.map(cells));
}
