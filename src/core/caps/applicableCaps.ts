import { calendarPeriod } from "./calendarPeriod";
import { counterFields } from "./counterFields";
import { capCounterKey } from "./keys";
import { totalCounters } from "./totals/totalCounters";
import type { CapRule } from "../rules/rules";
import { ownValue } from "../ownKeys";
import type { Send } from "../send";
import type { ApplicableCap, CapClock } from "./decisions";

function appliesTo(rule: CapRule, send: Send): boolean {
  if (!rule.enabled) return false;
  if (rule.org !== undefined && rule.org !== send.org) return false;
  if (rule.scope === "channel" && rule.channel !== send.channel) return false;
  if (rule.applies_to_categories.length > 0) {
    if (send.category === undefined || !rule.applies_to_categories.includes(send.category)) return false;
  }
  // indexed loops: a check runs this for every candidate and cap (150 times), and iterators and closures each allocate
  const match = counterFields.match(rule);
  for (let i = 0; i < match.length; i++) {
    const [attribute, values] = match[i];
    const value = ownValue(send.attributes, attribute);
    if (value === undefined || !values.includes(value)) return false;
  }
  // A cap split by an attribute the send does not carry has no counter to count in.
  for (let i = 0; i < rule.per.length; i++) if (!Object.hasOwn(send.attributes, rule.per[i])) return false;
  return true;
}

/**
 * The caps of a send: the union of its channel's caps and the global ones,
 * narrowed by org, category, match and per (SPEC §4). `counterKey` is the
 * recipient's counter hash when the caller has it already (a check makes it
 * once for its 50 candidates). `shared` holds the caps already made for this
 * recipient and send by counter field: a check's candidates share most of
 * their counters (one campaign, one category), and each is made once.
 * `into` gets the caps appended (a check lists its candidates' in one array).
 */
export function applicableCaps(
  rules: readonly CapRule[], send: Send, keyPrefix: string, recipientKey: string, clock?: CapClock, counterKey?: string, shared?: Map<string, ApplicableCap>,
  into?: ApplicableCap[],
): ApplicableCap[] {
  // gathered in `found` and copied out at its size: an array grown by push has room for 17
  const caps = (into ?? found) as ApplicableCap[];
  let n = into ? into.length : 0;
  let key = counterKey;
  for (let r = 0; r < rules.length; r++) {
    const rule = rules[r];
    if (!appliesTo(rule, send)) continue;
    if (rule.counts === "total") {
      caps[n++] = totalCap(rule, send, keyPrefix);
      continue;
    }
    // one counter whatever the zone: each send counts what the recipient got since its own local midnight (or Monday)
    if (rule.window_type === "lifetime") continue;
    const field = counterFields.field(rule, send.attributes);
    const made = shared?.get(field);
    if (made) {
      caps[n++] = made;
      continue;
    }
    const own = ownValue(send.recipientLimits, rule.id);
    key ??= capCounterKey(keyPrefix, send.org, recipientKey);
    const max = own === undefined ? rule.max_count : Math.min(rule.max_count, own);
    let cap: ApplicableCap;
    if (rule.window_type === "rolling") {
      cap = { rule, key, field, max, windowMs: rule.window_seconds * 1000 };
    } else {
      const period = calendarPeriod(rule.window_type, clock?.nowMs ?? Date.now(), send.timezone ?? clock?.defaultZone ?? "UTC");
      cap = { rule, key, field, max, windowMs: period.endMs - period.startMs, startMs: period.startMs, resetAt: period.endMs };
    }
    shared?.set(field, cap);
    caps[n++] = cap;
  }
  if (into) return into;
  const own = found.slice(0, n) as ApplicableCap[];
  // emptied, its room kept: it holds no cap beyond the call
  found.fill(undefined, 0, n);
  return own;
}

/** applicableCaps' scratch list: it calls nothing that comes back to it, so one is enough */
const found: (ApplicableCap | undefined)[] = new Array<ApplicableCap | undefined>(16).fill(undefined);

/**
 * A total cap counts every recipient of the org together: one counter per
 * per-value, no recipient limit (a preference lowers a recipient's caps, not
 * an ad's budget). Its calendar period is a UTC day or week that the store
 * reckons by its own clock (SPEC §9), never this instance's: the recipients'
 * zones would give one counter many different days, and instances' clocks
 * that disagree around midnight would give it two. So the cap is the same for
 * every send, made once per counter.
 */
function totalCap(rule: CapRule, send: Send, keyPrefix: string): ApplicableCap {
  const name = totalCounters.name(rule, keyPrefix, send.org, send.attributes);
  if (name.cap) return name.cap;
  const quota = totalCounters.fixedLimit(rule);
  name.cap = { rule, key: name.key, field: name.field, max: rule.max_count, windowMs: quota.windowMs, quota };
  return name.cap;
}

