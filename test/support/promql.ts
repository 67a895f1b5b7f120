/**
 * The metric names a PromQL expression reads, and the label names each of its
 * selectors matches on, for checking shipped rules and dashboards against the
 * metrics the package serves. Not a PromQL parser: it knows enough of the
 * syntax (strings, selectors, ranges, grouping clauses, functions, keywords,
 * numbers and durations, Grafana's $variables) to tell metric names from the rest.
 */
export interface Selector {
  metric: string;
  labels: string[];
}

const KEYWORDS = new Set([
  "and", "or", "unless", "offset", "bool", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan", "atan2",
  // aggregations, which may be followed by a grouping clause before their "("
  "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile",
]);
/** a number, a duration (5m, 1h30m) or a name; only names matter */
const TOKEN = /(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?[a-zA-Z]*)|([a-zA-Z_:][a-zA-Z0-9_:]*)/g;

/** Every selector of `expr`: each metric name it reads, with the label names its matchers use. */
export function selectors(expr: string): Selector[] {
  const unbraced = expr
    .replace(/\$\{[^}]*\}|\$[a-zA-Z_]\w*/g, "x") // Grafana variables, also inside ranges
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "$1");
  // each {…} becomes {N}, its matchers kept aside, so their label names are not read as metrics
  const matcherSets: string[] = [];
  const text = unbraced.replace(/\{([^}]*)\}/g, (_, inner: string) => `{${matcherSets.push(inner) - 1}}`);
  const found: Selector[] = [];
  for (const m of text.matchAll(TOKEN)) {
    const name = m[2];
    if (name === undefined) continue;
    const rest = text.slice((m.index ?? 0) + name.length).trimStart();
    if (rest.startsWith("(") || KEYWORDS.has(name.toLowerCase())) continue; // a function, an aggregation, a keyword
    const matchers = rest.startsWith("{") ? matcherSets[Number(rest.slice(1, rest.indexOf("}")))] ?? "" : "";
    const labels = [...matchers.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1]);
    found.push({ metric: name, labels });
  }
  // a selector of labels alone ({__name__=~"…"}) would read metrics this cannot name
  if (/\{/.test(text.replace(/[a-zA-Z_:][a-zA-Z0-9_:]*\s*\{/g, "x"))) throw new Error(`a selector without a metric name in: ${expr}`);
  return found;
}

/** The family a sample name belongs to: its own, or a histogram's with _bucket, _sum or _count taken off. */
export function familyName(metric: string, families: ReadonlyMap<string, { type: string }>): string | undefined {
  if (families.has(metric)) return metric;
  const m = /^(.*)_(bucket|sum|count)$/.exec(metric);
  if (m && families.get(m[1])?.type === "histogram") return m[1];
  return undefined;
}
