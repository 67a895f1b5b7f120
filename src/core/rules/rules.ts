/** A frequency cap as SPEC §4 describes it, after validation and defaults. */
export interface CapRule {
  id: string;
  org?: string;
  name?: string;
  enabled: boolean;
  scope: "channel" | "global";
  /** the channel of a channel-scoped cap; `"*"` for a global one */
  channel: string;
  max_count: number;
  window_seconds: number;
  /** lifetime: never resets (total caps only) */
  window_type: "rolling" | "calendar_day" | "calendar_week" | "lifetime";
  applies_to_categories: string[];
  per: string[];
  match: Record<string, string[]>;
  disposition: "skip" | "defer" | "collapse";
  /** `shadow`: checked and counted in the same atomic step, never refuses (SPEC §4) */
  enforcement: "enforce" | "shadow";
  /** `total`: one counter for every recipient of the org, split by `per` (SPEC §4) */
  counts: "per_recipient" | "total";
}

/** The rule shape as written by a flow author, an API client or a table row. */
export type CapRuleInput = Partial<CapRule> & Record<string, unknown>;

export function withDefaults(input: CapRuleInput): CapRule {
  const scope = input.scope === "global" ? "global" : "channel";
  return {
    id: String(input.id),
    ...(input.org !== undefined ? { org: input.org } : {}),
    ...(input.name !== undefined ? { name: input.name } : {}),
    enabled: input.enabled !== false,
    scope,
    channel: scope === "global" ? "*" : String(input.channel),
    max_count: Number(input.max_count),
    window_seconds: Number(input.window_seconds),
    window_type: input.window_type === "calendar_day" || input.window_type === "calendar_week" || input.window_type === "lifetime" ? input.window_type : "rolling",
    applies_to_categories: input.applies_to_categories ?? [],
    per: input.per ?? [],
    match: input.match ?? {},
    disposition: input.disposition === "defer" || input.disposition === "collapse" ? input.disposition : "skip",
    enforcement: input.enforcement === "shadow" ? "shadow" : "enforce",
    counts: input.counts === "total" ? "total" : "per_recipient",
  };
}
