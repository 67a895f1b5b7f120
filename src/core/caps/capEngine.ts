import { StoreUnavailableError } from "../errors";
import type { CapRule } from "../rules/rules";
import type { Send } from "../send";
import type { Lane } from "../sendQueue/sendQueue";
import type { ClaimOutcome, ClaimRequest } from "../store/admissionStore";
import { claimToken } from "../store/counterEntry";
import type { StoreAccess } from "../store/storeAccess";
import { applicableCaps } from "./applicableCaps";
import type { Candidate } from "./candidates";
import { counterSpecs, isTotal } from "./capKinds";
import { CapCheck } from "./check";
import { ClaimCall } from "./claimCall";
import type { ApplicableCap, CapClock, CapDecision, CapUsage, CheckDecision, DecisionTo, FailOpen } from "./decisions";
import { recipientToken } from "./keys";
import { CapRecorder } from "./record";
import { TotalClaims } from "./totalClaims";
import type { TotalCapUsage } from "./totals/orgTotals";
import { TotalLeases } from "./totals/totalLeases";
import { CapUsageReader } from "./usage";

export type { FailMode } from "../store/storeAccess";
export type * from "./decisions";

export interface CapEngineOptions {
  access: StoreAccess;
  /** the rules in force for a send's (org, channel); synchronous whenever they are at hand */
  rules: (org: string, channel: string) => readonly CapRule[] | Promise<readonly CapRule[]>;
  keyPrefix: string;
  exemptTiers: readonly string[];
  /** set: keys hold an HMAC of the recipient, never the address */
  hmacSecret?: string;
  /** total caps: how long a lease on a shared counter lives without being renewed (default 10 s) */
  leaseMs?: number;
  /** this instance's clock, for the calendar periods it reckons itself (default: the system clock); tests set it to run instances whose clocks disagree */
  now?: () => number;
}

export const DEFAULT_LEASE_MS = 10_000;

/**
 * Decides one send against every applicable cap with a single atomic store
 * claim (SPEC §5): the rules of the send, its caps, and the claim itself,
 * whose common path (rules at hand, only the recipient's own caps) sends the
 * store call with no promise made. Total caps, check mode, record mode and
 * usage reads are parts of their own (totalClaims, check, record, usage).
 */
export class CapEngine {
  private readonly claims: Lane<ClaimRequest, ClaimOutcome>;
  /** this cap-config's leases on total caps' shared counters */
  readonly totals: TotalLeases;
  private readonly totalClaims: TotalClaims;
  private readonly checking: CapCheck;
  private readonly recorder: CapRecorder;
  private readonly usageReader: CapUsageReader;
  /** a total cap's sends wait their turn per recipient (TotalClaims): a later send of that recipient claims after them */
  private readonly ownTurns: ReadonlyMap<string, Promise<void>>;

  constructor(private readonly options: CapEngineOptions) {
    const { access } = options;
    this.totals = new TotalLeases({ access, leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS });
    this.claims = access.lane("claim", (store, items, early) => store.claim(items, early));
    const parts = { access, totals: this.totals, keyPrefix: options.keyPrefix, ...(options.hmacSecret !== undefined ? { hmacSecret: options.hmacSecret } : {}) };
    const capsOf = { isExempt: (tier: string | undefined) => this.isExempt(tier), rulesOf: (send: Send) => this.rulesOf(send), capsFor: (send: Send, rules: readonly CapRule[]) => this.capsFor(send, rules) };
    this.totalClaims = new TotalClaims({
      access, totals: this.totals, claimCounters: (send, caps) => this.claimCounters(send, caps),
      checks: access.lane("check", (store, items, early) => store.inspect(items, early)),
      releases: access.lane("release", (store, items, early) => store.release(items, early), { bounded: false }),
    });
    this.ownTurns = this.totalClaims.ownTurns;
    this.checking = new CapCheck({ ...parts, clock: () => this.clock() });
    this.recorder = new CapRecorder({ ...parts, ...capsOf });
    this.usageReader = new CapUsageReader({ ...parts, ...capsOf, rules: options.rules });
  }

  /** Exempt tiers (cap-config exemptTiers) are neither checked nor recorded. */
  isExempt(tier: string | undefined): boolean {
    return tier !== undefined && this.options.exemptTiers.includes(tier);
  }

  capsFor(send: Send, rules: readonly CapRule[]): ApplicableCap[] {
    const recipient = recipientToken(send.recipient, this.options.hmacSecret);
    return applicableCaps(rules, send, this.options.keyPrefix, recipient, this.clock());
  }

  /** The instance's clock when one was given; else none, and applicableCaps reads the system clock (no object made per send). */
  private clock(): CapClock | undefined {
    const now = this.options.now;
    return now === undefined ? undefined : { nowMs: now(), defaultZone: "UTC" };
  }

  /**
   * The rules of a send, or the fail mode's answer when they cannot be had
   * (thrown when closed): at once when they are at hand (inline, a fresh
   * cache entry), else once loaded.
   */
  rulesOf(send: Send): readonly CapRule[] | StoreUnavailableError | Promise<readonly CapRule[] | StoreUnavailableError> {
    let rules: readonly CapRule[] | Promise<readonly CapRule[]>;
    try {
      rules = this.options.rules(send.org, send.channel);
    } catch (err) {
      return this.options.access.failed(send.org, send.channel, err);
    }
    if (Array.isArray(rules)) return rules as readonly CapRule[];
    return (rules as Promise<readonly CapRule[]>).catch((err: unknown) => this.options.access.failed(send.org, send.channel, err));
  }

  /** claimTo() as a promise: one path for both (a msg whose send is read later, a test, the admin API). */
  claim(send: Send): Promise<CapDecision> {
    return new Promise((resolve, reject) => this.claimTo(send, { decided: resolve, failed: reject }));
  }

  /**
   * check mode (SPEC §5): how each candidate (or, without candidates, the
   * send itself) stands against every cap that applies to it, all read in
   * one store call, nothing claimed.
   */
  check(send: Send, candidates?: readonly Candidate[]): Promise<CheckDecision> {
    if (this.isExempt(send.tier)) return Promise.resolve({ kind: "exempt" });
    return this.underRules(send, this.checkUnderRules, candidates);
  }

  private readonly checkUnderRules = (send: Send, rules: readonly CapRule[], candidates: readonly Candidate[] | undefined): Promise<CheckDecision> => this.checking.check(send, rules, candidates);

  /** record mode: count the send in every applicable cap without checking (idempotent). */
  record(send: Send): ReturnType<CapRecorder["record"]> {
    return this.recorder.record(send);
  }

  /** How full every cap of a recipient on (org, channel) is: its channel's caps and the global ones, read only. */
  usage(send: Send): Promise<CapUsage[]> {
    return this.usageReader.usage(send);
  }

  /** `GET …/totals`: every total cap of the org, read now for the given per values. */
  totalUsage(org: string, channels: readonly string[], attributes: Readonly<Record<string, string>>): Promise<TotalCapUsage[]> {
    return this.usageReader.totalUsage(org, channels, attributes);
  }

  /** Runs `then` with the send's rules (rulesOf: at once when at hand), or answers fail_open; rejects when closed. No closure per send: `then` is made once. */
  private underRules<D, A>(send: Send, then: (send: Send, rules: readonly CapRule[], arg: A) => Promise<D | FailOpen>, arg: A): Promise<D | FailOpen> {
    let got: ReturnType<CapEngine["rulesOf"]>;
    try {
      got = this.rulesOf(send);
    } catch (closed) {
      return Promise.reject(closed);
    }
    if (got instanceof Promise) return got.then((rules) => (rules instanceof StoreUnavailableError ? { kind: "fail_open" as const, error: rules } : then(send, rules, arg)));
    return got instanceof StoreUnavailableError ? Promise.resolve({ kind: "fail_open", error: got }) : then(send, got, arg);
  }

  private claimUnder(send: Send, rules: readonly CapRule[]): Promise<CapDecision> {
    return this.claimCaps(send, this.capsFor(send, rules));
  }

  private claimCaps(send: Send, caps: ApplicableCap[]): Promise<CapDecision> {
    if (caps.some(isTotal)) return this.totalClaims.claim(send, caps);
    // an earlier send of this recipient waits for a total cap's slot: this one claims after it
    const behind = this.ownTurns.size === 0 || caps.length === 0 ? undefined : this.ownTurns.get(caps[0].key);
    return behind ? behind.then(() => this.claimCounters(send, caps)) : this.claimCounters(send, caps);
  }

  /**
   * claim() with the decision told to `to` (what the fail mode throws, closed,
   * as a failure): a send whose rules are at hand and whose caps are all its
   * recipient's own, none of its recipient's sends waiting before it (most
   * sends), goes to the store with no promise made for it; a burst's sends
   * each made one, its functions, and the promises that read it.
   */
  claimTo(send: Send, to: DecisionTo): void {
    let claimed: Promise<CapDecision> | undefined;
    try {
      claimed = this.isExempt(send.tier) ? Promise.resolve<CapDecision>({ kind: "exempt" }) : this.submitOrClaim(send, to);
    } catch (err) {
      // the caps could not be made (claim() rejected with it before)
      claimed = Promise.reject(err);
    }
    // every other decision through a promise, so `to` is never told inside this call: its msg's end may begin the next
    // msg of a burst, whose decision (exempt, say) would be told at once too, and so on down the stack
    claimed?.then((decision) => to.decided(decision), (err: unknown) => to.failed(err));
  }

  /** Sends the claim, told to `to`, when the send takes the common path (undefined); else the promise of its decision. */
  private submitOrClaim(send: Send, to: DecisionTo): Promise<CapDecision> | undefined {
    let got: ReturnType<CapEngine["rulesOf"]>;
    try {
      got = this.rulesOf(send);
    } catch (closed) {
      return Promise.reject(closed);
    }
    if (got instanceof StoreUnavailableError) return Promise.resolve({ kind: "fail_open", error: got });
    if (got instanceof Promise) return got.then((rules) => (rules instanceof StoreUnavailableError ? { kind: "fail_open" as const, error: rules } : this.claimUnder(send, rules)));
    const caps = this.capsFor(send, got);
    const first = caps[0];
    if (first === undefined || caps.some(isTotal) || (this.ownTurns.size > 0 && this.ownTurns.has(first.key))) return this.claimCaps(send, caps);
    this.submitClaim(send, caps, to);
    return undefined;
  }

  /** The recipient's own caps: one atomic claim in its counter hash. */
  private claimCounters(send: Send, caps: ApplicableCap[]): Promise<CapDecision> {
    if (caps.length === 0) return Promise.resolve({ kind: "allowed", caps, outcome: { allowed: true, nowMs: Date.now(), counters: [] }, attempt: { member: send.messageId, token: claimToken() } });
    return new Promise((resolve, reject) => this.submitClaim(send, caps, { decided: resolve, failed: reject }));
  }

  /** Sends the claim of `caps` (at least one, all the recipient's own) to the store; its decision is told to `to`. */
  private submitClaim(send: Send, caps: ApplicableCap[], to: DecisionTo): void {
    const access = this.options.access;
    // one object is the request, the attempt the decision keeps, and the reader of the answer
    const call = new ClaimCall(access, send, caps, to, caps[0].key, send.messageId, claimToken(), counterSpecs(caps));
    access.submitTo(this.claims, call, call);
  }

}
