import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import { capRuleSchema, COUNTS, MAX_RECIPIENT_COUNT, MAX_TOTAL_COUNT, DISPOSITIONS, ENFORCEMENTS, WINDOW_TYPES } from "./capRuleSchema";

/**
 * What is wrong with a rule, as data: the field and a message code with its
 * placeholders. The text is made from the message catalog (ruleMessages.ts),
 * so the rules table, the JSON view, the deploy check, the admin API and the
 * runtime word every problem the same way. Pure (ajv only): the editor runs it.
 */
export type RuleProblemCode =
  | "notArray" | "notJson" | "notObject" | "unknownProperty" | "required"
  | "text" | "name" | "boolean" | "scope" | "wholeNumber" | "windowSeconds" | "oneOf"
  | "list" | "uniqueItems" | "maxItems" | "match" | "matchValues" | "timestamp"
  | "channelMissing" | "channelStar" | "globalChannel" | "unknownChannel"
  | "duplicateId" | "everyOrgId" | "lifetimeTotal";

export interface RuleProblem {
  /** the rule property (`match.campaign_id` for one match entry); "" for the rule as a whole */
  field: string;
  code: RuleProblemCode;
  params: Record<string, string | number>;
}

/** A problem of one rule of a set: `rule` counts from 1, as a person reads the list. */
export interface RuleSetProblem extends RuleProblem {
  rule: number;
  /** the rule's id, when it has a text one */
  id?: string;
}

const props = capRuleSchema.properties;

/** What each property must be, worded once whatever keyword failed (type, length, bounds…). */
const FIELD_PROBLEM: Record<string, Pick<RuleProblem, "code" | "params">> = {
  id: { code: "text", params: { max: props.id.maxLength } },
  org: { code: "text", params: { max: props.org.maxLength } },
  name: { code: "name", params: { max: props.name.maxLength } },
  enabled: { code: "boolean", params: {} },
  scope: { code: "scope", params: {} },
  channel: { code: "text", params: { max: props.channel.maxLength } },
  max_count: { code: "wholeNumber", params: { min: props.max_count.minimum, max: MAX_RECIPIENT_COUNT } },
  window_seconds: { code: "windowSeconds", params: { min: props.window_seconds.minimum, max: props.window_seconds.maximum } },
  window_type: { code: "oneOf", params: { allowed: WINDOW_TYPES.join(", ") } },
  disposition: { code: "oneOf", params: { allowed: DISPOSITIONS.join(", ") } },
  enforcement: { code: "oneOf", params: { allowed: ENFORCEMENTS.join(", ") } },
  counts: { code: "oneOf", params: { allowed: COUNTS.join(", ") } },
  applies_to_categories: { code: "list", params: { max: props.applies_to_categories.items.maxLength } },
  per: { code: "list", params: { max: props.per.items.maxLength } },
  match: { code: "match", params: {} },
  created_at: { code: "timestamp", params: {} },
  updated_at: { code: "timestamp", params: {} },
};

let compiled: ValidateFunction | undefined;

function validator(): ValidateFunction {
  compiled ??= new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(capRuleSchema);
  return compiled;
}

function problem(field: string, code: RuleProblemCode, params: Record<string, string | number> = {}): RuleProblem {
  return { field, code, params };
}

/** One ajv error as a problem, or null for the ones another error already says (`if`). */
function fromAjv(error: ErrorObject): RuleProblem | null {
  const path = error.instancePath.split("/").slice(1);
  const top = path[0] ?? "";
  if (error.keyword === "if") return null;
  if (error.keyword === "additionalProperties" && top === "") {
    return problem("", "unknownProperty", { name: String(error.params.additionalProperty) });
  }
  if (error.keyword === "required") {
    const missing = String(error.params.missingProperty);
    // channel is required only by the scope "channel" branch
    if (missing === "counts") return problem("window_type", "lifetimeTotal");
    return missing === "channel" ? problem("channel", "channelMissing") : problem(missing, "required");
  }
  if (top === "channel" && error.keyword === "const") return problem("channel", "globalChannel");
  if (top === "counts" && error.keyword === "const") return problem("window_type", "lifetimeTotal");
  if (top === "channel" && error.keyword === "not") return problem("channel", "channelStar");
  if (top === "per" && error.keyword === "maxItems") return problem("per", "maxItems", { max: props.per.maxItems });
  if ((top === "per" || top === "applies_to_categories") && error.keyword === "uniqueItems") return problem(top, "uniqueItems");
  if (top === "match" && path.length > 1) return problem(`match.${path[1] ?? ""}`, "matchValues");
  if (top === "") return problem("", "notObject");
  const known = FIELD_PROBLEM[top];
  return known ? problem(top, known.code, { ...known.params }) : problem(top, "notObject");
}

function sameProblem(a: RuleProblem, b: RuleProblem): boolean {
  return a.field === b.field && a.code === b.code && JSON.stringify(a.params) === JSON.stringify(b.params);
}

/** Every problem of one rule (each said once); empty when it is valid. */
export function findRuleProblems(input: unknown, knownChannels?: readonly string[]): RuleProblem[] {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return [problem("", "notObject")];
  const validate = validator();
  const found: RuleProblem[] = [];
  // a total cap may count far more than a recipient's (capRuleSchema.ts)
  const maxCount = (input as { counts?: unknown }).counts === "total" ? MAX_TOTAL_COUNT : MAX_RECIPIENT_COUNT;
  if (!validate(input)) {
    for (const error of validate.errors ?? []) {
      const p = fromAjv(error);
      if (p?.field === "max_count" && p.code === "wholeNumber") p.params.max = maxCount;
      if (p && !found.some((q) => sameProblem(p, q))) found.push(p);
    }
  }
  if (found.length === 0 && knownChannels) {
    const rule = input as { scope?: unknown; channel?: unknown };
    if (rule.scope === "channel" && typeof rule.channel === "string" && !knownChannels.includes(rule.channel)) {
      found.push(problem("channel", "unknownChannel", { channel: rule.channel, known: knownChannels.join(", ") }));
    }
  }
  return found;
}

function idOf(input: unknown): string | undefined {
  const id = (input as { id?: unknown } | null)?.id;
  return typeof id === "string" ? id : undefined;
}

function orgOf(input: unknown): unknown {
  return (input as { org?: unknown } | null)?.org;
}

/**
 * Every problem of a rule set: each rule's own, ids used twice within an org,
 * and an id shared by an every-org rule and an org rule (they would count in
 * one counter). Rules are numbered from 1.
 */
export function findRuleSetProblems(inputs: unknown, knownChannels?: readonly string[]): RuleSetProblem[] {
  if (!Array.isArray(inputs)) return [{ ...problem("", "notArray"), rule: 0 }];
  const found: RuleSetProblem[] = [];
  const at = (index: number, p: RuleProblem): RuleSetProblem => {
    const id = idOf(inputs[index]);
    return { ...p, rule: index + 1, ...(id !== undefined ? { id } : {}) };
  };
  const seen = new Map<string, number>();
  const everyOrg = new Map<string, number>();
  inputs.forEach((input, index) => {
    for (const p of findRuleProblems(input, knownChannels)) found.push(at(index, p));
    const id = idOf(input);
    if (id === undefined) return;
    const key = `${JSON.stringify(orgOf(input) ?? "")}\u0000${id}`;
    const first = seen.get(key);
    if (first !== undefined) found.push(at(index, problem("id", "duplicateId", { other: first + 1 })));
    else seen.set(key, index);
    if (orgOf(input) === undefined && !everyOrg.has(id)) everyOrg.set(id, index);
  });
  inputs.forEach((input, index) => {
    const id = idOf(input);
    const other = id === undefined ? undefined : everyOrg.get(id);
    if (orgOf(input) !== undefined && other !== undefined) found.push(at(index, problem("id", "everyOrgId", { other: other + 1 })));
  });
  return found;
}
