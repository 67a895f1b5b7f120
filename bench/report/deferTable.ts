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

const whole = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

function ms(value: number): string {
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

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
  const body = rows.map(cells);
  const widths = HEADER.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] as string).length)));
  const line = (values: readonly string[]): string =>
    `| ${values.map((v, i) => (RIGHT[i] ? v.padStart(widths[i] as number) : v.padEnd(widths[i] as number))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (RIGHT[i] ? `${"-".repeat(w + 1)}:` : `${"-".repeat(w + 2)}`)).join("|")}|`;
  return [line(HEADER), rule, ...body.map(line)].join("\n");
}
