import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import { ROOT } from "./nodeRedProcess";

/** The shipped monitoring files (monitoring/), read as Prometheus and Grafana read them. */
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
    found.push({ where: `variable ${v.name}`, expr: m[1] });
  }
  return found;
}
