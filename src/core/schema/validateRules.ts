import { RuleValidationError } from "../errors";
import { withDefaults, type CapRule, type CapRuleInput } from "../rules/rules";
import { englishMessages } from "./catalog";
import type { Translate } from "./messages";
import { describeRuleProblem, describeRuleSetProblem } from "./ruleMessages";
import { findRuleProblems, findRuleSetProblems } from "./ruleProblems";

/** Every schema problem of one rule, worded from the message catalog; empty when valid. */
export function ruleProblems(input: unknown, knownChannels?: readonly string[], t: Translate = englishMessages()): string[] {
  return findRuleProblems(input, knownChannels).map((p) => describeRuleProblem(p, t));
}

/**
 * Validates a whole rule set and returns it with defaults applied, or throws a
 * RuleValidationError naming every problem of every rule (rules counted from
 * 1): never half-applied.
 */
export function validateRules(inputs: unknown, knownChannels?: readonly string[], t: Translate = englishMessages()): CapRule[] {
  const problems = findRuleSetProblems(inputs, knownChannels).map((p) => describeRuleSetProblem(p, t));
  if (problems.length > 0) throw new RuleValidationError(problems);
  return (inputs as CapRuleInput[]).map((r) => withDefaults(r));
}
