import { applicableCaps, type ApplicableCap } from "./applicableCaps";
import { StoreUnavailableError } from "./errors";
import { recipientToken } from "./keys";
import type { CapRule } from "./rules";
import type { Send } from "./send";
import type { Lane } from "./sendQueue/sendQueue";
import type { StoreAccess } from "./storeAccess";
import type { ClaimOutcome, ClaimRequest, CounterSpec, RecordRequest } from "./stores/admissionStore";
import { claimToken } from "./stores/counterEntry";

export type { FailMode } from "./storeAccess";

export interface CapEngineOptions {
  access: StoreAccess;
  /** the rules in force for a send's (org, channel); synchronous whenever they are at hand */
  rules: (org: string, channel: string) => readonly CapRule[] | Promise<readonly CapRule[]>;
  keyPrefix: string;
  exemptTiers: readonly string[];
  /** set: keys hold an HMAC of the recipient, never the address */
  hmacSecret?: string;
}

export interface BlockingCap {
  rule: CapRule;
  max: number;
  count: number;
  retryAfterMs: number | null;
}

/** What a claim attempt took (or, timed out, may have taken): enough to give exactly that back. */
export interface ClaimAttempt {
  member: string;
  token: number;
}

export type CapDecision =
  | { kind: "exempt" }
  | { kind: "allowed"; caps: ApplicableCap[]; outcome: ClaimOutcome; attempt: ClaimAttempt }
  | { kind: "capped"; blocking: BlockingCap[]; retryAfterMs: number | null }
  /** caps and attempt are set when the store timed out: the claim may still have landed, so it is recorded to be given back */
  | { kind: "fail_open"; error: StoreUnavailableError; caps?: ApplicableCap[]; attempt?: ClaimAttempt };

export interface CapUsage {
  cap_id: string;
  name?: string;
  scope: "channel" | "global";
  channel: string;
  applies_to_categories: string[];
  window_seconds: number;
  max_count: number;
  count: number;
  remaining: number;
  retry_after_seconds: number | null;
}

/** Decides one send against every applicable cap with a single atomic store claim. */
export class CapEngine {
  private readonly claims: Lane<ClaimRequest, ClaimOutcome>;
  private readonly records: Lane<RecordRequest, number[]>;

  constructor(private readonly options: CapEngineOptions) {
    this.claims = options.access.lane("claim", (store, items) => store.claim(items));
    this.records = options.access.lane("record", (store, items) => store.record(items));
  }

  /** Exempt tiers (cap-config exemptTiers) are neither checked nor recorded. */
  isExempt(tier: string | undefined): boolean {
    return tier !== undefined && this.options.exemptTiers.includes(tier);
  }

  capsFor(send: Send, rules: readonly CapRule[]): ApplicableCap[] {
    const recipient = recipientToken(send.recipient, this.options.hmacSecret);
    return applicableCaps(rules, send, this.options.keyPrefix, recipient);
  }

  /** The rules of a send, or the fail mode's answer when they cannot be had (thrown when closed). */
  async rulesOf(send: Send): Promise<readonly CapRule[] | StoreUnavailableError> {
    try {
      const rules = this.options.rules(send.org, send.channel);
      return Array.isArray(rules) ? rules : await rules;
    } catch (err) {
      return this.options.access.failed(send.org, send.channel, err);
    }
  }

  claim(send: Send): Promise<CapDecision> {
    if (this.isExempt(send.tier)) return Promise.resolve({ kind: "exempt" });
    let rules: readonly CapRule[] | Promise<readonly CapRule[]>;
    try {
      rules = this.options.rules(send.org, send.channel);
    } catch (err) {
      return this.rulesFailed(send, err);
    }
    // rules at hand (inline, or a fresh cache entry): no extra turn of the event loop
    if (Array.isArray(rules)) return this.claimUnder(send, rules as readonly CapRule[]);
    return (rules as Promise<readonly CapRule[]>).then((loaded) => this.claimUnder(send, loaded), (err: unknown) => this.rulesFailed(send, err));
  }

  private rulesFailed(send: Send, err: unknown): Promise<CapDecision> {
    try {
      return Promise.resolve({ kind: "fail_open", error: this.options.access.failed(send.org, send.channel, err) });
    } catch (closed) {
      return Promise.reject(closed);
    }
  }

  private claimUnder(send: Send, rules: readonly CapRule[]): Promise<CapDecision> {
    const caps = this.capsFor(send, rules);
    const attempt = { member: send.messageId, token: claimToken() };
    if (caps.length === 0) return Promise.resolve({ kind: "allowed", caps, outcome: { allowed: true, nowMs: Date.now(), counters: [] }, attempt });
    const request = { key: (caps[0] as ApplicableCap).key, ...attempt, counters: counterSpecs(caps) };
    return this.options.access.decide(send.org, send.channel, this.claims, request).then((outcome): CapDecision => {
      if (outcome instanceof StoreUnavailableError) {
        return outcome.kind === "timeout"
          ? { kind: "fail_open", error: outcome, caps, attempt }
          : { kind: "fail_open", error: outcome };
      }
      if (outcome.allowed) return { kind: "allowed", caps, outcome, attempt };
      return blockedDecision(caps, outcome);
    });
  }

  /**
   * How full every cap of a recipient on (org, channel) is: its channel's caps
   * and the global ones, whatever their category or match, read only.
   */
  async usage(send: Send): Promise<CapUsage[]> {
    const rules = await this.rulesOf(send);
    if (rules instanceof StoreUnavailableError) throw rules;
    const all = rules.map((rule) => ({ ...rule, applies_to_categories: [], match: {} }));
    const caps = this.capsFor(send, all);
    const key = caps[0]?.key;
    const counters = key === undefined ? [] : await this.options.access.callAdmin((store) => store.inspect(key, counterSpecs(caps)));
    return caps.map((cap, i) => {
      const original = rules.find((r) => r.id === cap.rule.id) as CapRule;
      const counter = counters[i] as { count: number; retryAfterMs: number | null; full: boolean };
      return {
        cap_id: cap.rule.id,
        ...(cap.rule.name !== undefined ? { name: cap.rule.name } : {}),
        scope: cap.rule.scope,
        channel: cap.rule.channel,
        applies_to_categories: original.applies_to_categories,
        window_seconds: cap.rule.window_seconds,
        max_count: cap.max,
        count: counter.count,
        remaining: Math.max(0, cap.max - counter.count),
        retry_after_seconds: counter.full ? (counter.retryAfterMs === null ? null : Math.max(1, Math.ceil(counter.retryAfterMs / 1000))) : 0,
      };
    });
  }

  /** record mode: count the send in every applicable cap without checking (idempotent). */
  async record(send: Send): Promise<{ caps: ApplicableCap[]; counts: number[] } | StoreUnavailableError | "exempt"> {
    if (this.isExempt(send.tier)) return "exempt";
    const rules = await this.rulesOf(send);
    if (rules instanceof StoreUnavailableError) return rules;
    const caps = this.capsFor(send, rules);
    if (caps.length === 0) return { caps, counts: [] };
    const request = { key: (caps[0] as ApplicableCap).key, member: send.messageId, counters: counterSpecs(caps) };
    const counts = await this.options.access.decide(send.org, send.channel, this.records, request);
    return counts instanceof StoreUnavailableError ? counts : { caps, counts };
  }
}

function counterSpecs(caps: readonly ApplicableCap[]): CounterSpec[] {
  return caps.map((c) => ({
    field: c.field, windowMs: c.windowMs, max: c.max,
    ...(c.resetAt !== undefined ? { startMs: c.startMs ?? 0, resetAt: c.resetAt } : {}),
  }));
}

function blockedDecision(caps: ApplicableCap[], outcome: ClaimOutcome): CapDecision {
  const blocking: BlockingCap[] = [];
  outcome.counters.forEach((counter, i) => {
    const cap = caps[i] as ApplicableCap;
    if (counter.blocking) blocking.push({ rule: cap.rule, max: cap.max, count: counter.count, retryAfterMs: counter.retryAfterMs });
  });
  // the longest wait first: it names the cap that binds, and frees every other on the way
  blocking.sort((a, b) => rank(b.retryAfterMs) - rank(a.retryAfterMs));
  const first = blocking[0];
  return { kind: "capped", blocking, retryAfterMs: first ? first.retryAfterMs : null };
}

function rank(retryAfterMs: number | null): number {
  return retryAfterMs === null ? Number.POSITIVE_INFINITY : retryAfterMs;
}
