import { StoreUnavailableError } from "../errors";
import type { Send } from "../send";
import type { StoreAccess } from "../store/storeAccess";
import type { CapRule } from "../rules/rules";
import { counterSpecs, isTotal, totalCounter } from "./capKinds";
import type { ApplicableCap, CapUsage } from "./decisions";
import { orgTotals, type TotalCapUsage } from "./totals/orgTotals";
import { remainingOf, type TotalLeases, type TotalReading } from "./totals/totalLeases";

/** What the usage reads need of the engine: a send's rules and caps. */
export interface UsageOptions {
  access: StoreAccess;
  keyPrefix: string;
  totals: TotalLeases;
  rules: (org: string, channel: string) => readonly CapRule[] | Promise<readonly CapRule[]>;
  rulesOf(send: Send): readonly CapRule[] | StoreUnavailableError | Promise<readonly CapRule[] | StoreUnavailableError>;
  capsFor(send: Send, rules: readonly CapRule[]): ApplicableCap[];
}

/** How full caps are, for the admin API and the sidebar's inspector: read only, off the send path. */
export class CapUsageReader {
  constructor(private readonly options: UsageOptions) {}

  /**
   * How full every cap of a recipient on (org, channel) is: its channel's caps
   * and the global ones, whatever their category or match, read only.
   */
  async usage(send: Send): Promise<CapUsage[]> {
    const rules = await this.options.rulesOf(send);
    if (rules instanceof StoreUnavailableError) throw rules;
    const all = rules.map((rule) => ({ ...rule, applies_to_categories: [], match: {} }));
    const caps = this.options.capsFor(send, all);
    const own = caps.filter((c) => !isTotal(c));
    const key = own[0]?.key;
    const ownCounters = key === undefined ? [] : await this.options.access.callAdmin(async (store) => {
      const [read] = await store.inspect([{ key, counters: counterSpecs(own) }]);
      if (read === undefined || read instanceof StoreUnavailableError) throw read ?? new StoreUnavailableError("error", "no answer");
      return read;
    });
    const totals = new Map<ApplicableCap, TotalReading>();
    await Promise.all(caps.filter(isTotal).map(async (cap) => {
      totals.set(cap, await this.options.access.callAdmin(() => this.options.totals.read(totalCounter(cap), 0)));
    }));
    return caps.map((cap) => {
      const original = rules.find((r) => r.id === cap.rule.id) as CapRule;
      const total = totals.get(cap);
      if (total) return totalUsage(cap, original, total);
      const counter = ownCounters[own.indexOf(cap)];
      return {
        counts: "per_recipient",
        ...usageOf(cap, original),
        count: counter.count,
        remaining: Math.max(0, cap.max - counter.count),
        retry_after_seconds: counter.full ? (counter.retryAfterMs === null ? null : Math.max(1, Math.ceil(counter.retryAfterMs / 1000))) : 0,
      };
    });
  }

  /** `GET …/totals`: every total cap of the org (its channels' rules and the global ones), read now for the given per values. */
  totalUsage(org: string, channels: readonly string[], attributes: Readonly<Record<string, string>>): Promise<TotalCapUsage[]> {
    return orgTotals({
      channels,
      keyPrefix: this.options.keyPrefix,
      rules: this.options.rules,
      read: (cap) => this.options.access.callAdmin(() => this.options.totals.read(totalCounter(cap), 0)),
    }, org, attributes);
  }

}

/** What a cap's usage says of the cap itself, whatever it counts. */
function usageOf(cap: ApplicableCap, original: CapRule): Pick<CapUsage, "cap_id" | "name" | "scope" | "channel" | "applies_to_categories" | "window_seconds" | "enforcement" | "max_count"> {
  return {
    cap_id: cap.rule.id,
    ...(cap.rule.name !== undefined ? { name: cap.rule.name } : {}),
    scope: cap.rule.scope,
    channel: cap.rule.channel,
    applies_to_categories: original.applies_to_categories,
    window_seconds: cap.rule.window_seconds,
    enforcement: cap.rule.enforcement,
    max_count: cap.max,
  };
}

/** A total cap's usage: counted sends, slots out on lease, and what is left for anyone. */
function totalUsage(cap: ApplicableCap, original: CapRule, total: TotalReading): CapUsage {
  const remaining = remainingOf(total);
  return {
    counts: "total",
    ...usageOf(cap, original),
    count: total.used,
    remaining,
    leased: total.leased,
    leases: total.leases,
    retry_after_seconds: remaining > 0 ? 0 : total.retryAfterMs === null ? null : Math.max(1, Math.ceil(total.retryAfterMs / 1000)),
  };
}

