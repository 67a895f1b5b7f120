import { applicableCaps } from "../applicableCaps";
import type { ApplicableCap } from "../decisions";
import { emptyRecord, ownValue } from "../../ownKeys";
import type { CapRule } from "../../rules/rules";
import type { Send } from "../../send";
import { remainingOf, type TotalReading } from "./totalLeases";

/**
 * One total cap of an org as `GET …/totals` reports it (SPEC §7): its shared
 * counter for the per values asked for. `count`, `remaining`, `leased` and
 * `leases` are null when a per value was not given (`needs` names them): a
 * cap split by `per` has one counter per value.
 */
export interface TotalCapUsage {
  cap_id: string;
  name?: string;
  counts: "total";
  scope: "channel" | "global";
  channel: string;
  window_type: CapRule["window_type"];
  window_seconds: number;
  enforcement: CapRule["enforcement"];
  per: string[];
  max_count: number;
  /** sends counted in the window (lifetime: ever) */
  count: number | null;
  /** free for any instance: max_count − count − leased */
  remaining: number | null;
  /** slots held on lease by the instances (spendable by them only), and how many leases */
  leased: number | null;
  leases: number | null;
  /** the per attributes whose values the query did not give */
  needs?: string[];
  note?: string;
}

export interface OrgTotalsSource {
  /** the cap-config's channels: an org's rules are its channels' rules and the global ones */
  channels: readonly string[];
  keyPrefix: string;
  rules(org: string, channel: string): readonly CapRule[] | Promise<readonly CapRule[]>;
  /** a total cap's counter, read now */
  read(cap: ApplicableCap): Promise<TotalReading>;
}

/** Every enabled total cap that applies to `org`, once each, in rule order (channel by channel, global ones where first met). */
export async function orgTotalRules(source: Pick<OrgTotalsSource, "channels" | "rules">, org: string): Promise<CapRule[]> {
  const lists = await Promise.all(source.channels.map(async (channel) => source.rules(org, channel)));
  const byId = new Map<string, CapRule>();
  for (const rules of lists) {
    for (const rule of rules) {
      if (rule.counts !== "total" || !rule.enabled || (rule.org !== undefined && rule.org !== org) || byId.has(rule.id)) continue;
      byId.set(rule.id, rule);
    }
  }
  return [...byId.values()];
}

/** `GET …/totals`: how full each total cap of the org is, for the given per values. */
export async function orgTotals(source: OrgTotalsSource, org: string, attributes: Readonly<Record<string, string>>): Promise<TotalCapUsage[]> {
  const rules = await orgTotalRules(source, org);
  return Promise.all(rules.map(async (rule): Promise<TotalCapUsage> => {
    const base = {
      cap_id: rule.id,
      ...(rule.name !== undefined ? { name: rule.name } : {}),
      counts: "total" as const,
      scope: rule.scope,
      channel: rule.channel,
      window_type: rule.window_type,
      window_seconds: rule.window_seconds,
      enforcement: rule.enforcement,
      per: rule.per,
      max_count: rule.max_count,
    };
    const needs = rule.per.filter((attribute) => ownValue(attributes, attribute) === undefined);
    if (needs.length > 0) {
      return { ...base, count: null, remaining: null, leased: null, leases: null, needs, note: `one counter per value of ${needs.join(", ")}: give them in attributes` };
    }
    // the cap as a send with these attributes meets it, whatever its categories and match (as …/usage reads them)
    const send: Send = { recipient: "", channel: rule.channel, messageId: "totals", org, attributes, recipientLimits: emptyRecord() };
    const [cap] = applicableCaps([{ ...rule, applies_to_categories: [], match: {} }], send, source.keyPrefix, "");
    if (cap === undefined) throw new Error(`total cap "${rule.id}" has no counter`);
    const reading = await source.read(cap);
    return {
      ...base,
      count: reading.used,
      remaining: remainingOf(reading),
      leased: reading.leased,
      leases: reading.leases,
    };
  }));
}
