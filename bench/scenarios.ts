/** A cap as a flow author writes it in a cap-config's inline `rules` (SPEC §4). */
export interface InlineRule {
  id: string;
  scope: "channel";
  channel: string;
  max_count: number;
  window_seconds: number;
}

export type StoreKind = "memory" | "redis";

/** cap-config `rulesSource`: the rules in the flow, or the same rules as rows of a PostgreSQL table */
export type RulesSource = "inline" | "postgres";

export interface Scenario {
  name: string;
  store: StoreKind;
  rulesSource: RulesSource;
  /** the caps in force: the cap-config's inline `rules`, or the rows the bench writes to the rules table */
  rules: InlineRule[];
}

export const CHANNEL = "sms";

/**
 * Caps from tight to loose. With ~2 msgs per recipient per scenario only the
 * first (5 an hour) ever binds, and only for a few recipients: most claims are
 * admitted, a few take the refusal path.
 */
const CAPS: readonly InlineRule[] = [
  { id: "sms_hour", scope: "channel", channel: CHANNEL, max_count: 5, window_seconds: 3_600 },
  { id: "sms_day", scope: "channel", channel: CHANNEL, max_count: 10, window_seconds: 86_400 },
  { id: "sms_week", scope: "channel", channel: CHANNEL, max_count: 20, window_seconds: 604_800 },
  { id: "sms_month", scope: "channel", channel: CHANNEL, max_count: 40, window_seconds: 2_592_000 },
  { id: "sms_quarter", scope: "channel", channel: CHANNEL, max_count: 100, window_seconds: 7_776_000 },
];

export const CAP_COUNTS = [1, 3, 5] as const;

/** cap counts that also run with their caps in PostgreSQL (`<store>-<n>cap-pg`, right after `<store>-<n>cap`) */
export const PG_CAP_COUNTS: readonly number[] = [3];

/** The org of every bench send: msgs carry none, so the gate takes cap-config `defaultOrg`, which the flow sets to this. */
export const ORG = "default";

export function capsOf(count: number): InlineRule[] {
  if (count > CAPS.length) throw new Error(`at most ${CAPS.length} caps are defined, asked for ${count}`);
  return CAPS.slice(0, count).map((rule) => ({ ...rule }));
}

/** Every scenario, or those named in `only` (an unknown name is an error, not an empty table). */
export function scenarios(only?: readonly string[]): Scenario[] {
  const stores: StoreKind[] = ["memory", "redis"];
  const all = stores.flatMap((store) => CAP_COUNTS.flatMap((n): Scenario[] => {
    const inline: Scenario = { name: `${store}-${n}cap`, store, rulesSource: "inline", rules: capsOf(n) };
    if (!PG_CAP_COUNTS.includes(n)) return [inline];
    return [inline, { name: `${store}-${n}cap-pg`, store, rulesSource: "postgres", rules: capsOf(n) }];
  }));
  if (!only) return all;
  const unknown = only.filter((name) => !all.some((s) => s.name === name));
  if (unknown.length > 0) throw new Error(`BENCH_SCENARIOS: unknown ${unknown.join(", ")} (known: ${all.map((s) => s.name).join(", ")})`);
  return all.filter((s) => only.includes(s.name));
}

/** The inline scenario a postgres one is compared with: same store, same caps. */
export function inlineTwinName(scenario: Scenario): string | undefined {
  return scenario.rulesSource === "postgres" ? `${scenario.store}-${scenario.rules.length}cap` : undefined;
}
