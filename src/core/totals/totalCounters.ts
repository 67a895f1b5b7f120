import type { ApplicableCap } from "../applicableCaps";
import { capCounterField, totalCounterKey } from "../keys";
import { PerValueTree, perValuesOf } from "../perValueTree";
import type { CapRule } from "../rules";
import { WINDOW_BUCKETS, type QuotaLimit } from "./quotaStep";

/** A total cap's counter for one org and per values: its key and its field name. */
export interface TotalCounterName {
  key: string;
  field: string;
  /** a rolling or lifetime total's cap as a send meets it: the same for every send (a calendar one changes with its period) */
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

  /** A rolling or lifetime total's limit (a calendar one changes with its period). */
  fixedLimit(rule: CapRule): QuotaLimit {
    let limit = this.limits.get(rule);
    if (!limit) {
      const windowMs = rule.window_type === "lifetime" ? 0 : rule.window_seconds * 1000;
      const bucketMs = windowMs === 0 ? 0 : Math.max(1000, Math.floor(windowMs / WINDOW_BUCKETS));
      limit = { max: rule.max_count, windowMs, bucketMs, periodStartMs: 0, periodEndMs: 0 };
      this.limits.set(rule, limit);
    }
    return limit;
  }
}

export const totalCounters = new TotalCounterCache();
