/** Number formats every bench table uses. */
export const whole = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

export function ms(value: number): string {
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

/** A markdown table, columns padded so it reads in a terminal too; `right[i]` right-aligns column i. */
export function renderTable(header: readonly string[], right: readonly boolean[], body: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (values: readonly string[]): string =>
    `| ${values.map((v, i) => (right[i] ? v.padStart(widths[i]) : v.padEnd(widths[i]))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (right[i] ? `${"-".repeat(w + 1)}:` : `${"-".repeat(w + 2)}`)).join("|")}|`;
  return [line(header), rule, ...body.map(line)].join("\n");
}
