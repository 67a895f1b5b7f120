import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import { exportedFamilies, type ExportedFamily } from "../support/exportedMetrics";
import { ROOT } from "../support/nodeRedProcess";
import { promtool } from "../support/prometheus";
import { familyName, selectors } from "../support/promql";

export const ALERTS_FILE = join(ROOT, "monitoring", "sendgate-alerts.yml");
export const DASHBOARD_FILE = join(ROOT, "monitoring", "sendgate-dashboard.json");

interface RuleFile {
  groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
}

/** Every alert rule of the shipped file: name and expression. */
export function alertRules(): { alert: string; expr: string }[] {
  const file = load(readFileSync(ALERTS_FILE, "utf8")) as RuleFile;
  return file.groups.flatMap((g) => g.rules.map((r) => ({ alert: r.alert ?? r.record ?? "?", expr: r.expr })));
}

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; definition?: string; query?: string | { query?: string } }[] };
}

/** Every PromQL expression of the shipped dashboard: each panel's targets, and the queries of its variables. */
export function dashboardExprs(): { where: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, "utf8")) as Dashboard;
  const found: { where: string; expr: string }[] = [];
  const visit = (panels: Panel[]): void => {
    for (const p of panels) {
      for (const t of p.targets ?? []) {
        assert.ok(t.expr, `panel "${p.title}" has a target without expr`);
        found.push({ where: `panel "${p.title}"`, expr: t.expr });
      }
      visit(p.panels ?? []);
    }
  };
  visit(dashboard.panels);
  for (const v of dashboard.templating.list.filter((t) => t.type === "query")) {
    const query = typeof v.query === "string" ? v.query : v.query?.query ?? v.definition ?? "";
    // label_values(<selector>, <label>): the selector is PromQL, the label is not
    const m = /^label_values\((.*),\s*[a-zA-Z_]\w*\)$/.exec(query.trim());
    assert.ok(m, `variable ${v.name}: ${query} is not label_values(<selector>, <label>)`);
    found.push({ where: `variable ${v.name}`, expr: m[1] as string });
  }
  return found;
}

/** What in `expr` is not something the package serves: unknown metrics, labels its selectors match that the metric lacks. */
function unknownIn(expr: string, families: Map<string, ExportedFamily>): string[] {
  const problems: string[] = [];
  const found = selectors(expr);
  if (found.length === 0) problems.push("names no metric");
  for (const s of found) {
    const name = familyName(s.metric, families);
    if (!name) {
      problems.push(`unknown metric ${s.metric}`);
      continue;
    }
    const family = families.get(name) as ExportedFamily;
    const extra = s.metric.endsWith("_bucket") ? ["le"] : [];
    for (const label of s.labels) if (!family.labels.has(label) && !extra.includes(label)) problems.push(`${s.metric} has no label ${label}`);
  }
  return problems;
}

/**
 * The shipped monitoring files (monitoring/): the alert rules pass promtool's
 * check and its unit tests (test/ops/alerts.promtool.yml), and every
 * expression of the rules and of the Grafana dashboard names only metric
 * families, and labels, that a cap-config serves.
 */
describe("alert rules and dashboard [monitoring]", function () {
  this.timeout(60_000);
  let families: Map<string, ExportedFamily>;

  before(async () => {
    families = await exportedFamilies();
  });

  it("promtool check rules passes the alert rules", () => {
    const { status, output } = promtool(["check", "rules", ALERTS_FILE]);
    assert.equal(status, 0, output);
    assert.match(output, new RegExp(`SUCCESS: ${alertRules().length} rules found`));
  });

  it("promtool test rules passes their unit tests: series born above 0, a memory store, quiet-hours backlogs", () => {
    const { status, output } = promtool(["test", "rules", "alerts.promtool.yml"], join(ROOT, "test", "ops"));
    assert.equal(status, 0, output);
    assert.match(output, /SUCCESS/);
  });

  it("has a rule for fail-open, a store down, overload, a growing held backlog and shadow caps that would refuse", () => {
    const names = alertRules().map((r) => r.alert);
    for (const needed of ["SendgateFailOpen", "SendgateStoreDown", "SendgateOverloaded", "SendgateHeldBacklogGrowing", "SendgateShadowCapWouldRefuse"]) {
      assert.ok(names.includes(needed), `${needed} in ${names.join(", ")}`);
    }
  });

  it("every alert rule names only metrics and labels the package serves", () => {
    const problems = alertRules().flatMap((r) => unknownIn(r.expr, families).map((p) => `${r.alert}: ${p}`));
    assert.deepEqual(problems, []);
  });

  it("every dashboard query names only metrics and labels the package serves", () => {
    const exprs = dashboardExprs();
    assert.ok(exprs.length >= 20, `${exprs.length} expressions`);
    const problems = exprs.flatMap((e) => unknownIn(e.expr, families).map((p) => `${e.where}: ${p}`));
    assert.deepEqual(problems, []);
  });

  it("the dashboard shows every metric family the package serves", () => {
    const shown = new Set(dashboardExprs().flatMap((e) => selectors(e.expr).map((s) => familyName(s.metric, families))));
    assert.deepEqual([...families.keys()].filter((name) => !shown.has(name)), []);
  });

  it("tells metric names from functions, keywords, labels and Grafana variables", () => {
    const expr = 'sum by (gate) (increase(a_total{reason="x{y}",gate=~"$gate"}[$__rate_interval])) > 0 or b unless c offset 10m\n'
      + "  / on (job) group_left (config) histogram_quantile(0.9, d_bucket) * 1e3 and max without (le) (e)";
    assert.deepEqual(selectors(expr), [
      { metric: "a_total", labels: ["reason", "gate"] }, { metric: "b", labels: [] }, { metric: "c", labels: [] },
      { metric: "d_bucket", labels: [] }, { metric: "e", labels: [] },
    ]);
    assert.deepEqual(unknownIn('sendgate_msgs_total{outcom="x"} + sendgate_nope', families), ["sendgate_msgs_total has no label outcom", "unknown metric sendgate_nope"]);
  });
});
