import { calendarPeriod } from "./calendarPeriod";
import { capKeyUnder, recipientKeyBase } from "./keys";
import type { CapRule } from "./rules";
import { ownValue } from "./ownKeys";
import type { Send } from "./send";

/** One cap that gates a given send, with the counter it claims in. */
export interface ApplicableCap {
  rule: CapRule;
  key: string;
  /** min(max_count, recipientLimits[cap]) */
  max: number;
  windowMs: number;
  /** calendar caps: when the current period ends and every slot frees */
  resetAt?: number;
}

/** Where a cap's calendar periods are reckoned: the recipient's zone, else the gate's default. */
export interface CapClock {
  nowMs: number;
  defaultZone: string;
}

function appliesTo(rule: CapRule, send: Send): boolean {
  if (!rule.enabled) return false;
  if (rule.org !== undefined && rule.org !== send.org) return false;
  if (rule.scope === "channel" && rule.channel !== send.channel) return false;
  if (rule.applies_to_categories.length > 0) {
    if (send.category === undefined || !rule.applies_to_categories.includes(send.category)) return false;
  }
  for (const [attribute, values] of Object.entries(rule.match)) {
    const value = ownValue(send.attributes, attribute);
    if (value === undefined || !values.includes(value)) return false;
  }
  // A cap split by an attribute the send does not carry has no counter to count in.
  return rule.per.every((attribute) => ownValue(send.attributes, attribute) !== undefined);
}

/**
 * The caps of a send: the union of its channel's caps and the global ones,
 * narrowed by org, category, match and per (SPEC §4).
 */
export function applicableCaps(rules: readonly CapRule[], send: Send, keyPrefix: string, recipientKey: string, clock?: CapClock): ApplicableCap[] {
  const caps: ApplicableCap[] = [];
  let base: string | undefined;
  for (const rule of rules) {
    if (!appliesTo(rule, send)) continue;
    const own = ownValue(send.recipientLimits, rule.id);
    base ??= recipientKeyBase(keyPrefix, send.org, recipientKey);
    const key = capKeyUnder(base, rule.id, rule.per.map((a) => ownValue(send.attributes, a) as string));
    const max = own === undefined ? rule.max_count : Math.min(rule.max_count, own);
    if (rule.window_type === "rolling") {
      caps.push({ rule, key, max, windowMs: rule.window_seconds * 1000 });
      continue;
    }
    const period = calendarPeriod(rule.window_type, clock?.nowMs ?? Date.now(), send.timezone ?? clock?.defaultZone ?? "UTC");
    // "#" never appears in an encoded part, so a period can never pass for a per value
    caps.push({ rule, key: `${key}#${period.id}`, max, windowMs: period.endMs - period.startMs, resetAt: period.endMs });
  }
  return caps;
}
