import type { Translate } from "../../core/schema/messages";
import { describeRuleProblem, describeRuleSetProblem, RULE_MESSAGES } from "../../core/schema/ruleMessages";
import { findRuleSetProblems, type RuleSetProblem } from "../../core/schema/ruleProblems";
import { buildRule, type InputProblems, type Rule, type RowValues } from "./ruleRows";

/**
 * The rules table, the JSON view and the deploy check, all worded by the
 * schema's own messages (src/core/schema): what the author reads while editing
 * is what the runtime says at deploy.
 */
export interface TableRow {
  now: RowValues;
  /** the loaded rule and what its row showed then; absent for a new row */
  original?: Rule;
  initial?: RowValues | null;
}

export interface RowProblem {
  /** the rule property it is about ("" for the rule as a whole) */
  field: string;
  text: string;
}

export interface RowReport {
  rule: Rule;
  problems: RowProblem[];
}

function inputProblem(field: string, problem: InputProblems[string], t: Translate): RowProblem {
  const text = t(`${RULE_MESSAGES}.input.${problem.key}`, problem.params);
  return { field, text: t(`${RULE_MESSAGES}.fieldProblem`, { field, problem: text }) };
}

/** Each row's rule and its problems (one per property: what it reads first), with ids checked across rows. */
export function checkTable(rows: readonly TableRow[], channels: readonly string[], t: Translate): RowReport[] {
  const built = rows.map((row) => buildRule(row.now, row.original ?? {}, row.initial ?? null));
  const reports: RowReport[] = built.map(({ rule, problems }) => ({
    rule,
    problems: Object.keys(problems).map((field) => inputProblem(field, problems[field], t)),
  }));
  for (const p of findRuleSetProblems(built.map((b) => b.rule), channels)) {
    const report = reports[p.rule - 1];
    if (!report) continue;
    // a property whose text could not be read already says so; the schema's word on what was kept adds nothing
    if (p.field !== "" && report.problems.some((q) => q.field === p.field || p.field.startsWith(`${q.field}.`))) continue;
    report.problems.push({ field: p.field, text: describeRuleProblem(p, t) });
  }
  return reports;
}

/** The stored form of the rules: the array, or text that a flow may hold (or the author left unparsed). */
function problemsOf(value: unknown, channels: readonly string[]): RuleSetProblem[] {
  if (value === undefined || value === null || value === "") return [];
  let rules: unknown = value;
  if (typeof value === "string") {
    try {
      rules = JSON.parse(value) as unknown;
    } catch (err) {
      return [{ rule: 0, field: "", code: "notJson", params: { error: (err as Error).message } }];
    }
  }
  return findRuleSetProblems(rules, channels);
}

/** Every problem of the rules as the JSON view lists them: "rule 2 ("mkt") max_count: …". */
export function checkRules(value: unknown, channels: readonly string[], t: Translate): string[] {
  return problemsOf(value, channels).map((p) => describeRuleSetProblem(p, t));
}

/** The deploy check's one line: the first problem, and how many more. */
export function deployProblem(value: unknown, channels: readonly string[], t: Translate): string | null {
  const problems = checkRules(value, channels, t);
  const first = problems[0];
  if (first === undefined) return null;
  return problems.length === 1 ? first : t(`${RULE_MESSAGES}.andMore`, { first, count: problems.length - 1 });
}
