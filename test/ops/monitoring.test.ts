import assert from "node:assert/strict";
import { join } from "node:path";
import { exportedFamilies, type ExportedFamily } from "../support/exportedMetrics";
import { alertRules, ALERTS_FILE, dashboardExprs } from "../support/monitoringFiles";
import { ROOT } from "../support/nodeRedProcess";
import { promtool } from "../support/prometheus";
import { familyName, selectors } from "../support/promql";

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
