import { has, isPlainObject, splitList } from "./lists";

/**
 * One row of the rules table as text, and back. A row remembers the rule it
 * was loaded from and what its inputs showed then: a field the author leaves
 * alone keeps the loaded value exactly (even its absence, even a value the
 * table cannot show), so a hand-written rule saves back unchanged, key order
 * included. Only touched fields are rewritten from the inputs.
 */
export interface RowValues {
  enabled: boolean;
  id: string;
  name: string;
  org: string;
  scope: string;
  channel: string;
  categories: string;
  max: string;
  windowNumber: string;
  windowUnit: string;
  windowType: string;
  per: string;
  match: string;
  disposition: string;
  enforcement: string;
  counts: string;
}

export type Rule = Record<string, unknown>;

/** Problems met reading a row's inputs (before the schema), by rule property: a catalog key under sendgate.rules.input and its params. */
export type InputProblems = Record<string, { key: string; params: Record<string, string | number> }>;

export const WINDOW_UNITS = [
  { value: "seconds", seconds: 1 },
  { value: "minutes", seconds: 60 },
  { value: "hours", seconds: 3600 },
  { value: "days", seconds: 86400 },
  { value: "weeks", seconds: 604800 },
] as const;

/** A calendar row keeps one period in window_seconds, which the schema requires. */
export const CALENDAR_SPAN: Readonly<Record<string, { number: string; unit: string }>> = {
  calendar_day: { number: "1", unit: "days" },
  calendar_week: { number: "1", unit: "weeks" },
};

/** Window types whose period is not window_seconds (which is kept, being required): the calendar ones, and lifetime (never resets). */
export function fixedPeriod(windowType: string): boolean {
  return has(CALENDAR_SPAN, windowType) || windowType === "lifetime";
}

/** A stored value as input text: a string as it is, anything else as JSON. */
export function textOf(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

function plainToken(value: unknown, forbidden: RegExp): value is string {
  return typeof value === "string" && value !== "" && value.trim() === value && !forbidden.test(value);
}

/** A list as "a, b" when that reads back the same, else as JSON. */
export function listTextOf(value: unknown): string {
  if (Array.isArray(value) && value.every((v) => plainToken(v, /,/)) && !(value.length > 0 && String(value[0]).startsWith("["))) {
    return value.join(", ");
  }
  return textOf(value);
}

/** match as "attr=v1|v2; attr2=v3" when that reads back the same, else as JSON. */
export function matchTextOf(match: unknown): string {
  if (match === undefined) return "";
  if (!isPlainObject(match)) return textOf(match);
  const keys = Object.keys(match);
  const plain = keys.every((key) => {
    const values = match[key];
    return plainToken(key, /[=;|]/) && Array.isArray(values) && values.length > 0 && values.every((v) => plainToken(v, /[;|]/));
  }) && !(keys.length > 0 && String(keys[0]).startsWith("{"));
  if (!plain) return textOf(match);
  return keys.map((key) => `${key}=${(match[key] as string[]).join("|")}`).join("; ");
}

/** window_seconds in the largest unit that divides it. */
export function windowOf(seconds: unknown): { number: string; unit: string } {
  if (typeof seconds === "number" && Number.isInteger(seconds) && seconds > 0) {
    for (let i = WINDOW_UNITS.length - 1; i >= 0; i--) {
      const unit = WINDOW_UNITS[i];
      if (unit && seconds % unit.seconds === 0) return { number: String(seconds / unit.seconds), unit: unit.value };
    }
  }
  return { number: textOf(seconds), unit: "seconds" };
}

export function secondsOf(number: number, unit: string): number {
  const factor = WINDOW_UNITS.find((u) => u.value === unit)?.seconds ?? 1;
  const seconds = number * factor;
  const rounded = Math.round(seconds);
  // 1.1 hours is 3960.0000000000005 in floating point: it means 3960
  return Math.abs(seconds - rounded) < 1e-6 ? rounded : seconds;
}

/** "" → absent; a number → the number; anything else → the text, which the schema refuses. */
export function parseNumber(text: string): number | string | undefined {
  const t = text.trim();
  if (t === "") return undefined;
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
}

type Parsed = { value: unknown; problem?: { key: string; params: Record<string, string | number> } };

/** Comma-separated text, or a JSON array; "" → absent. */
export function parseList(text: string): Parsed {
  const t = text.trim();
  if (t.startsWith("[")) {
    try {
      return { value: JSON.parse(t) as unknown };
    } catch (err) {
      return { value: text, problem: { key: "listJson", params: { error: (err as Error).message } } };
    }
  }
  const list = splitList(t);
  return { value: list.length === 0 ? undefined : list };
}

/** "attr=v1|v2; attr2=v3", or a JSON object; "" → absent. */
export function parseMatch(text: string): Parsed {
  const t = text.trim();
  if (t === "") return { value: undefined };
  if (t.startsWith("{")) {
    try {
      return { value: JSON.parse(t) as unknown };
    } catch (err) {
      return { value: text, problem: { key: "matchJson", params: { error: (err as Error).message } } };
    }
  }
  const match: Record<string, string[]> = {};
  for (const raw of t.split(";")) {
    const part = raw.trim();
    if (part === "") continue;
    const eq = part.indexOf("=");
    const key = eq > 0 ? part.slice(0, eq).trim() : "";
    if (key === "") return { value: text, problem: { key: "matchSyntax", params: { part } } };
    const values = part.slice(eq + 1).split("|").map((v) => v.trim()).filter((v) => v !== "");
    if (values.length === 0) return { value: text, problem: { key: "matchEmpty", params: { name: key } } };
    if (has(match, key)) return { value: text, problem: { key: "matchTwice", params: { name: key } } };
    match[key] = values;
  }
  return { value: Object.keys(match).length === 0 ? undefined : match };
}

/** What each input of a row shows for a stored rule. */
export function displayOf(rule: Rule): RowValues {
  const span = windowOf(rule.window_seconds);
  return {
    enabled: rule.enabled !== false,
    id: textOf(rule.id),
    name: textOf(rule.name),
    org: textOf(rule.org),
    scope: textOf(rule.scope),
    channel: textOf(rule.channel),
    categories: listTextOf(rule.applies_to_categories),
    max: textOf(rule.max_count),
    windowNumber: span.number,
    windowUnit: span.unit,
    windowType: rule.window_type === undefined ? "rolling" : textOf(rule.window_type),
    per: listTextOf(rule.per),
    match: matchTextOf(rule.match),
    disposition: rule.disposition === undefined ? "skip" : textOf(rule.disposition),
    enforcement: rule.enforcement === undefined ? "enforce" : textOf(rule.enforcement),
    counts: rule.counts === undefined ? "per_recipient" : textOf(rule.counts),
  };
}

/** A new row: one day, on the channel of the row above it. */
export function newRowValues(channel: string): RowValues {
  return displayOf({ scope: "channel", channel, window_seconds: 86400 });
}

/**
 * The rule a row stands for, and the problems met reading its inputs. `original`
 * and `initial` are the loaded rule and what the row showed then (absent for a
 * new row); keys keep the loaded rule's order, a new row's follow SPEC §4.
 */
export function buildRule(now: RowValues, original: Rule = {}, initial: RowValues | null = null): { rule: Rule; problems: InputProblems } {
  const rule: Rule = JSON.parse(JSON.stringify(original)) as Rule;
  const problems: InputProblems = {};
  const same = (field: keyof RowValues): boolean => initial !== null && initial[field] === now[field];
  const put = (key: string, value: unknown): void => {
    if (value === undefined) delete rule[key];
    else rule[key] = value;
  };
  const trimmed = (text: string): string | undefined => (text.trim() === "" ? undefined : text.trim());
  const list = (field: "categories" | "per", key: string): void => {
    const parsed = parseList(now[field]);
    if (parsed.problem) problems[key] = parsed.problem;
    put(key, parsed.value);
  };

  if (!same("id")) put("id", trimmed(now.id));
  if (!same("org")) put("org", trimmed(now.org));
  if (!same("name")) put("name", trimmed(now.name));
  if (!same("enabled")) put("enabled", now.enabled ? (has(original, "enabled") ? true : undefined) : false);
  if (!same("scope")) put("scope", now.scope === "" ? undefined : now.scope);
  if (now.scope === "global") {
    // a global cap carries no channel (a loaded "*" stays while the scope is untouched)
    if (!same("scope")) put("channel", undefined);
  } else if (!same("scope") || !same("channel")) {
    put("channel", now.channel === "" ? undefined : now.channel);
  }
  if (!same("max")) put("max_count", parseNumber(now.max));
  if (!same("windowNumber") || !same("windowUnit")) {
    const n = parseNumber(now.windowNumber);
    put("window_seconds", typeof n === "number" ? secondsOf(n, now.windowUnit) : n);
  }
  if (!same("windowType")) put("window_type", now.windowType === "rolling" && !has(original, "window_type") ? undefined : now.windowType);
  if (!same("categories")) list("categories", "applies_to_categories");
  if (!same("per")) list("per", "per");
  if (!same("match")) {
    const match = parseMatch(now.match);
    if (match.problem) problems.match = match.problem;
    put("match", match.value);
  }
  if (!same("disposition")) put("disposition", now.disposition === "skip" && !has(original, "disposition") ? undefined : now.disposition);
  if (!same("enforcement")) put("enforcement", now.enforcement === "enforce" && !has(original, "enforcement") ? undefined : now.enforcement);
  if (!same("counts")) put("counts", now.counts === "per_recipient" && !has(original, "counts") ? undefined : now.counts);
  return { rule, problems };
}

/** Whether stored rules can be shown as table rows; `problem` is a catalog key under sendgate.rules.problem when not. */
export function tableRulesOf(value: unknown): { rules: Rule[] } | { problem: { key: string; params: Record<string, string | number> } } {
  if (value === undefined || value === null) return { rules: [] };
  let parsed: unknown = value;
  if (typeof value === "string") {
    if (value.trim() === "") return { rules: [] };
    try {
      parsed = JSON.parse(value) as unknown;
    } catch (err) {
      return { problem: { key: "notJson", params: { error: (err as Error).message } } };
    }
  }
  if (!Array.isArray(parsed)) return { problem: { key: "notArray", params: {} } };
  if (!parsed.every(isPlainObject)) return { problem: { key: "notObject", params: {} } };
  return { rules: parsed };
}
