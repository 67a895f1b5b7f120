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

const whole = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

function ms(value: number): string {
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

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
  const body = rows.map(cells);
  const widths = HEADER.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] as string).length)));
  const line = (values: readonly string[]): string =>
    `| ${values.map((v, i) => (RIGHT[i] ? v.padStart(widths[i] as number) : v.padEnd(widths[i] as number))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (RIGHT[i] ? `${"-".repeat(w + 1)}:` : `${"-".repeat(w + 2)}`)).join("|")}|`;
  return [line(HEADER), rule, ...body.map(line)].join("\n");
}
