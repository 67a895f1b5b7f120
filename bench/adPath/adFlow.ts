import type { InlineRule } from "../scenarios";

/** ad 3 a day inside campaign 10 a week inside category 5 an hour: the hierarchy of the ad seed. */
export const AD_RULES: (InlineRule & { scope: "channel"; per: string[] })[] = [
  { id: "ad-daily", scope: "channel", channel: "in_app", max_count: 3, window_seconds: 86_400, per: ["ad_id"] },
  { id: "campaign-weekly", scope: "channel", channel: "in_app", max_count: 10, window_seconds: 604_800, per: ["campaign_id"] },
  { id: "category-hourly", scope: "channel", channel: "in_app", max_count: 5, window_seconds: 3_600, per: ["category"] },
];

export const CATEGORIES = ["sports", "news", "music"];

/** A bid request's candidates: `count` ads over 5 campaigns and 3 categories (count + 8 counters in all). */
export function candidates(count: number): { id: string; ad_id: string; campaign_id: string; category: string }[] {
  return Array.from({ length: count }, (_, i) => ({ id: `ad${i}`, ad_id: `ad${i}`, campaign_id: `c${i % 5}`, category: CATEGORIES[i % 3] }));
}

export interface AdFlow {
  /** the check gate (what deployGate waits for) */
  gateId: string;
  configId: string;
  recorderId: string;
  nodes: object[];
}

/** One cap-config on Redis, a check-mode gate and a record-mode gate, outputs wired nowhere. */
export function adFlow(tag: string, redisUrl: string, keyPrefix: string): AdFlow {
  const tab = `bench-ad-tab-${tag}`;
  const config = `bench-ad-cfg-${tag}`;
  const gate = (id: string, mode: string, y: number) => ({
    id, type: "frequency-cap-gate", z: tab, config, mode, x: 200, y, wires: [[], [], []],
    recipient: "recipient", recipientType: "msg", channel: "in_app", channelType: "str",
  });
  return {
    gateId: `bench-ad-check-${tag}`,
    configId: config,
    recorderId: `bench-ad-record-${tag}`,
    nodes: [
      { id: tab, type: "tab", label: "bench ad path" },
      { id: config, type: "cap-config", store: "redis", redisUrl, keyPrefix, rules: AD_RULES, failMode: "open", timeoutMs: 1000 },
      gate(`bench-ad-check-${tag}`, "check", 100),
      gate(`bench-ad-record-${tag}`, "record", 200),
    ],
  };
}
