import type { Translate } from "./messages";
import type { RuleProblem, RuleSetProblem } from "./ruleProblems";

/** Catalog keys of the rule messages (nodes/locales/<lang>/cap-config.json, `sendgate.rules`). */
export const RULE_MESSAGES = "sendgate.rules";

/** "max_count: must be a whole number from 1 to 1000000": what the rules table shows in a rule's row. */
export function describeRuleProblem(p: RuleProblem, t: Translate): string {
  const text = t(`${RULE_MESSAGES}.problem.${p.code}`, p.params);
  return p.field === "" ? text : t(`${RULE_MESSAGES}.fieldProblem`, { field: p.field, problem: text });
}

/** "rule 2 ("mkt") …": where a rule is named from outside its row (JSON view, deploy check, runtime). */
export function ruleLabel(rule: number, id: string | undefined, t: Translate): string {
  return id === undefined ? t(`${RULE_MESSAGES}.rule`, { number: rule }) : t(`${RULE_MESSAGES}.ruleWithId`, { number: rule, id });
}

/** "rule 2 ("mkt") max_count: must be a whole number from 1 to 1000000". */
export function describeRuleSetProblem(p: RuleSetProblem, t: Translate): string {
  const what = describeRuleProblem(p, t);
  if (p.rule === 0) return t(`${RULE_MESSAGES}.setProblem`, { problem: what });
  return t(`${RULE_MESSAGES}.ruleProblem`, { rule: ruleLabel(p.rule, p.id, t), problem: what });
}
