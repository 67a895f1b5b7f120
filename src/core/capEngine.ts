import { applicableCaps, type ApplicableCap } from "./applicableCaps";
import { StoreUnavailableError } from "./errors";
import { recipientToken } from "./keys";
import type { CapRule } from "./rules";
import type { Send } from "./send";
import type { StoreAccess } from "./storeAccess";
import type { ClaimOutcome, CounterSpec } from "./stores/admissionStore";

export type { FailMode } from "./storeAccess";

export interface CapEngineOptions {
  access: StoreAccess;
  /** the rules in force for a send; sync so the hot path never waits on a lookup */
  rules: () => readonly CapRule[];
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

export type CapDecision =
  | { kind: "exempt" }
  | { kind: "allowed"; caps: ApplicableCap[]; outcome: ClaimOutcome; member: string }
  | { kind: "capped"; blocking: BlockingCap[]; retryAfterMs: number | null }
  | { kind: "fail_open"; error: StoreUnavailableError };

/** Decides one send against every applicable cap with a single atomic store claim. */
export class CapEngine {
  constructor(private readonly options: CapEngineOptions) {}

  isExempt(send: Send): boolean {
    return send.tier !== undefined && this.options.exemptTiers.includes(send.tier);
  }

  capsFor(send: Send): ApplicableCap[] {
    const recipient = recipientToken(send.recipient, this.options.hmacSecret);
    return applicableCaps(this.options.rules(), send, this.options.keyPrefix, recipient);
  }

  async claim(send: Send): Promise<CapDecision> {
    if (this.isExempt(send)) return { kind: "exempt" };
    const caps = this.capsFor(send);
    if (caps.length === 0) return { kind: "allowed", caps, outcome: { allowed: true, nowMs: Date.now(), counters: [] }, member: send.messageId };
    const specs = counterSpecs(caps);
    const outcome = await this.options.access.decide(send.org, send.channel, (store) => store.claim(send.messageId, specs));
    if (outcome instanceof StoreUnavailableError) return { kind: "fail_open", error: outcome };
    if (outcome.allowed) return { kind: "allowed", caps, outcome, member: send.messageId };
    return blockedDecision(caps, outcome);
  }

  /** record mode: count the send in every applicable cap without checking (idempotent). */
  async record(send: Send): Promise<{ caps: ApplicableCap[]; counts: number[] } | StoreUnavailableError | "exempt"> {
    if (this.isExempt(send)) return "exempt";
    const caps = this.capsFor(send);
    if (caps.length === 0) return { caps, counts: [] };
    const specs = counterSpecs(caps);
    const counts = await this.options.access.decide(send.org, send.channel, (store) => store.record(send.messageId, specs));
    return counts instanceof StoreUnavailableError ? counts : { caps, counts };
  }
}

function counterSpecs(caps: readonly ApplicableCap[]): CounterSpec[] {
  return caps.map((c) => ({ key: c.key, windowMs: c.windowMs, max: c.max }));
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
