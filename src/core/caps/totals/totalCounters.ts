import type { ApplicableCap } from "../decisions";
import { capCounterField, totalCounterKey } from "../keys";
import { PerValueTree, perValuesOf } from "../perValueTree";
import type { CapRule } from "../../rules/rules";
import { WINDOW_BUCKETS, type QuotaLimit } from "./quotaStep";
import { UTC_DAY_MS, UTC_WEEK_MS } from "./totalPeriod";

/** A total cap's counter for one org and per values: its key and its field name. */
export interface TotalCounterName {
  key: string;
  field: string;
  /** the total's cap as a send meets it: the same for every send (a calendar total's period is the store's to reckon) */
  cap?: ApplicableCap;
}

/** Past this many orgs a rule's cache starts again (each org's per values are bounded by its own tree). */
const MAX_ORGS = 10_000;

/**
 * Every send of a hot total cap names the same counter: its key and field
 * (encoded) and its limit are made once per rule, org and per values, not per
 * send. The same key string also makes the lease's Map lookup cheap.
 */
export class TotalCounterCache {
  private readonly names = new WeakMap<CapRule, { keyPrefix: string; orgs: Map<string, PerValueTree<TotalCounterName>> }>();
  private readonly limits = new WeakMap<CapRule, QuotaLimit>();

  /** Looked up org, then per value by value (PerValueTree): nothing is made per send. */
  name(rule: CapRule, keyPrefix: string, org: string, attributes: Readonly<Record<string, string>>): TotalCounterName {
    let cached = this.names.get(rule);
    // a rule belongs to one cap-config, so one prefix; another prefix starts the rule's cache again
    if (!cached || cached.keyPrefix !== keyPrefix || cached.orgs.size >= MAX_ORGS) {
      cached = { keyPrefix, orgs: new Map() };
      this.names.set(rule, cached);
    }
    let tree = cached.orgs.get(org);
    if (!tree) {
      tree = new PerValueTree<TotalCounterName>();
      cached.orgs.set(org, tree);
    }
    const node = tree.at(rule, attributes);
    if (!node.value) {
      const perValues = perValuesOf(rule, attributes);
      node.value = { key: totalCounterKey(keyPrefix, org, rule.id, perValues), field: capCounterField(rule.id, perValues) };
    }
    return node.value;
  }

  /**
   * A total's limit, the same for every send: a calendar total names only its
   * period's length (a UTC day or week, one bucket each), and the store
   * reckons which period it is by its own clock (totalPeriod).
   */
  fixedLimit(rule: CapRule): QuotaLimit {
    let limit = this.limits.get(rule);
    if (!limit) {
      limit = limitOf(rule);
      this.limits.set(rule, limit);
    }
    return limit;
  }
}

/** A total's limit as its rule gives it: a calendar one a UTC day or week, a rolling one WINDOW_BUCKETS buckets of its window, a lifetime one none. */
function limitOf(rule: CapRule): QuotaLimit {
  if (rule.window_type === "calendar_day" || rule.window_type === "calendar_week") {
    const periodMs = rule.window_type === "calendar_day" ? UTC_DAY_MS : UTC_WEEK_MS;
    return { max: rule.max_count, windowMs: periodMs, bucketMs: periodMs, calendar: true };
  }
  const windowMs = rule.window_type === "lifetime" ? 0 : rule.window_seconds * 1000;
  const bucketMs = windowMs === 0 ? 0 : Math.max(1000, Math.floor(windowMs / WINDOW_BUCKETS));
  return { max: rule.max_count, windowMs, bucketMs, calendar: false };
}

export const totalCounters = new TotalCounterCache();
