import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import { capRuleSchema } from "./capRuleSchema";
import { RuleValidationError } from "../errors";
import { withDefaults, type CapRule, type CapRuleInput } from "../rules";

let compiled: ValidateFunction | undefined;

function validator(): ValidateFunction {
  if (!compiled) {
    const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
    compiled = ajv.compile(capRuleSchema);
  }
  return compiled;
}

function describe(error: ErrorObject): string {
  const at = error.instancePath === "" ? "rule" : error.instancePath.slice(1).replace(/\//g, ".");
  if (error.keyword === "additionalProperties") {
    return `${at}: unknown property "${String(error.params.additionalProperty)}"`;
  }
  if (error.keyword === "enum") {
    return `${at}: must be one of ${JSON.stringify(error.params.allowedValues)}`;
  }
  if (error.keyword === "if") return "";
  if (error.keyword === "const" && at === "channel") {
    return `channel: a global cap must not name a channel (it counts every channel)`;
  }
  if (error.keyword === "not" && at === "channel") {
    return `channel: a channel cap needs a real channel, not "*"`;
  }
  return `${at}: ${error.message ?? error.keyword}`;
}

/** Every schema problem of one rule, as readable sentences; empty when valid. */
export function ruleProblems(input: unknown, knownChannels?: readonly string[]): string[] {
  const validate = validator();
  const problems = validate(input) ? [] : (validate.errors ?? []).map(describe).filter((p) => p !== "");
  if (problems.length === 0 && knownChannels) {
    const rule = input as { scope?: string; channel?: string };
    if (rule.scope === "channel" && rule.channel && !knownChannels.includes(rule.channel)) {
      problems.push(`channel: unknown channel "${rule.channel}" (known: ${knownChannels.join(", ")})`);
    }
  }
  return [...new Set(problems)];
}

/**
 * Validates a whole rule set and returns it with defaults applied, or throws a
 * RuleValidationError naming every problem of every rule: never half-applied.
 */
export function validateRules(inputs: unknown, knownChannels?: readonly string[]): CapRule[] {
  if (!Array.isArray(inputs)) throw new RuleValidationError(["rules: must be an array of caps"]);
  const problems: string[] = [];
  const seen = new Map<string, number>();
  inputs.forEach((input, index) => {
    const label = typeof input === "object" && input !== null && typeof (input as { id?: unknown }).id === "string"
      ? `rule ${index} ("${(input as { id: string }).id}")`
      : `rule ${index}`;
    for (const p of ruleProblems(input, knownChannels)) problems.push(`${label} ${p}`);
    const id = (input as { id?: unknown } | null)?.id;
    const org = (input as { org?: unknown } | null)?.org;
    if (typeof id === "string") {
      const idKey = `${String(org ?? "")}\u0000${id}`;
      if (seen.has(idKey)) problems.push(`${label} id: duplicate of rule ${seen.get(idKey)}`);
      else seen.set(idKey, index);
    }
  });
  // a rule for every org and one for a single org under the same id would count in one counter
  const everyOrg = new Map<string, number>();
  inputs.forEach((input, index) => {
    const rule = input as { id?: unknown; org?: unknown } | null;
    if (typeof rule?.id === "string" && rule.org === undefined) everyOrg.set(rule.id, index);
  });
  inputs.forEach((input, index) => {
    const rule = input as { id?: unknown; org?: unknown } | null;
    if (typeof rule?.id === "string" && rule.org !== undefined && everyOrg.has(rule.id)) {
      problems.push(`rule ${index} ("${rule.id}") id: also the id of rule ${everyOrg.get(rule.id)}, which applies to every org; give one of them another id`);
    }
  });
  if (problems.length > 0) throw new RuleValidationError(problems);
  return (inputs as CapRuleInput[]).map((r) => withDefaults(r));
}
