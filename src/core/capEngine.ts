import { applicableCaps, type ApplicableCap } from "./applicableCaps";
import { StoreUnavailableError } from "./errors";
import { FailOpenReporter } from "./failOpenReporter";
import { recipientToken } from "./keys";
import type { CapRule } from "./rules";
import type { Send } from "./send";
import { StoreGuard } from "./storeGuard";
import type { ClaimOutcome, AdmissionStore } from "./stores/admissionStore";

export type FailMode = "open" | "closed";

export interface CapEngineOptions {
  store: AdmissionStore;
  /** the rules in force for a send; sync so the hot path never waits on a lookup */
  rules: () => readonly CapRule[];
  keyPrefix: string;
  exemptTiers: readonly string[];
  failMode: FailMode;
  timeoutMs: number;
  /** set: keys hold an HMAC of the recipient, never the address */
  hmacSecret?: string;
  warn: (text: string) => void;
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
  readonly guard: StoreGuard;
  readonly failOpen: FailOpenReporter;

  constructor(private readonly options: CapEngineOptions) {
    this.guard = new StoreGuard({ timeoutMs: options.timeoutMs });
    this.failOpen = new FailOpenReporter(options.warn);
  }

  capsFor(send: Send): ApplicableCap[] {
    const recipient = recipientToken(send.recipient, this.options.hmacSecret);
    return applicableCaps(this.options.rules(), send, this.options.keyPrefix, recipient);
  }

  async claim(send: Send): Promise<CapDecision> {
    if (send.tier !== undefined && this.options.exemptTiers.includes(send.tier)) return { kind: "exempt" };
    const caps = this.capsFor(send);
    const specs = caps.map((c) => ({ key: c.key, windowMs: c.windowMs, max: c.max }));
    let outcome: ClaimOutcome;
    try {
      const store = this.options.store;
      if (caps.length === 0) outcome = { allowed: true, nowMs: Date.now(), counters: [] };
      else if (store.remote) outcome = await this.guard.run(() => store.claim(send.messageId, specs));
      else outcome = await store.claim(send.messageId, specs);
    } catch (err) {
      const failure = err as StoreUnavailableError;
      if (this.options.failMode === "closed") throw failure;
      this.failOpen.report(send.org, send.channel, failure.message);
      return { kind: "fail_open", error: failure };
    }
    if (outcome.allowed) return { kind: "allowed", caps, outcome, member: send.messageId };
    return blockedDecision(caps, outcome);
  }
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
