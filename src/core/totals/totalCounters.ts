import { capCounterField, totalCounterKey } from "../keys";
import { ownValue } from "../ownKeys";
import type { CapRule } from "../rules";
import { WINDOW_BUCKETS, type QuotaLimit } from "./quotaStep";

/** A total cap's counter for one org and per values: its key and its field name. */
export interface TotalCounterName {
  key: string;
  field: string;
}

/** Past this many counters a rule's cache starts again (per values such as ad ids are unbounded). */
const MAX_CACHED = 10_000;

/**
 * Every send of a hot total cap names the same counter: its key and field
 * (encoded) and its limit are made once per rule, org and per values, not per
 * send. The same key string also makes the lease's Map lookup cheap.
 */
/** One level of the cache: the counters of one org (or of the per values so far), and the levels below by the next per value. */
class Level {
  name: TotalCounterName | undefined;
  readonly next = new Map<string, Level>();
}

export class TotalCounterCache {
  private readonly names = new WeakMap<CapRule, { keyPrefix: string; orgs: Map<string, Level>; size: number }>();
  private readonly limits = new WeakMap<CapRule, QuotaLimit>();

  /**
   * Looked up org, then per value by value, each read from the send's
   * attributes (appliesTo checked they are there): no string or array is made
   * per send, the lookup is the hot path.
   */
  name(rule: CapRule, keyPrefix: string, org: string, attributes: Readonly<Record<string, string>>): TotalCounterName {
    let cached = this.names.get(rule);
    // a rule belongs to one cap-config, so one prefix; another prefix starts the rule's cache again
    if (!cached || cached.keyPrefix !== keyPrefix || cached.size >= MAX_CACHED) {
      cached = { keyPrefix, orgs: new Map(), size: 0 };
      this.names.set(rule, cached);
    }
    let level: Level | undefined = cached.orgs.get(org);
    if (!level) {
      level = new Level();
      cached.orgs.set(org, level);
    }
    for (let i = 0; i < rule.per.length; i++) {
      const value = ownValue(attributes, rule.per[i] as string) as string;
      let below: Level | undefined = level.next.get(value);
      if (!below) {
        below = new Level();
        level.next.set(value, below);
      }
      level = below;
    }
    if (!level.name) {
      const perValues = rule.per.map((a) => ownValue(attributes, a) as string);
      level.name = { key: totalCounterKey(keyPrefix, org, rule.id, perValues), field: capCounterField(rule.id, perValues) };
      cached.size += 1;
    }
    return level.name;
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
