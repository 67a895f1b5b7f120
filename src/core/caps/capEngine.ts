import { applicableCaps, type ApplicableCap, type CapClock } from "./applicableCaps";
import { ClaimCall, rank, type DecisionTo } from "./claimCall";
import { StoreUnavailableError } from "../errors";
import { capCounterKey, recipientToken } from "./keys";
import type { CapRule } from "../rules/rules";
import type { Send } from "../send";
import type { Lane } from "../sendQueue/sendQueue";
import type { StoreAccess } from "../store/storeAccess";
import type { Candidate } from "./candidates";
import type { ClaimOutcome, ClaimRequest, CounterOutcome, CounterReading, CounterSpec, InspectRequest, RecordRequest, ReleaseAnswer, ReleaseRequest } from "../store/admissionStore";
import { claimToken } from "../store/counterEntry";
import { remainingOf, TotalLeases, type SpendTicket, type TotalCounter, type TotalReading, type TotalRefusal, type TotalSpend } from "./totals/totalLeases";
import type { QuotaLimit } from "./totals/quotaStep";
import { orgTotals, type TotalCapUsage } from "./totals/orgTotals";

export type { FailMode } from "../store/storeAccess";

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
  /** caps and outcome are the recipient's own counters; totals the slots taken in total caps, shadowTotals the shadow ones that had none left */
  | { kind: "allowed"; caps: ApplicableCap[]; outcome: ClaimOutcome; attempt: ClaimAttempt; totals?: TotalTaken[]; shadowTotals?: ShadowRefusal[] }
  | { kind: "capped"; blocking: BlockingCap[]; retryAfterMs: number | null }
  /** caps and attempt are set when the store timed out: the claim may still have landed, so it is recorded to be given back */
  | { kind: "fail_open"; error: StoreUnavailableError; caps?: ApplicableCap[]; attempt?: ClaimAttempt; totals?: TotalTaken[] };

/** The fail mode's answer when the store (or the rules) cannot be had. */
type FailOpen = { kind: "fail_open"; error: StoreUnavailableError };

/** A slot a send took in a total cap. */
export interface TotalTaken {
  cap: ApplicableCap;
  spend: TotalSpend;
}

/** A check's answer for one candidate (or the msg's own send): SPEC §5 check mode. */
export interface CheckVerdict {
  eligible: boolean;
  /** the fewest sends left over its caps; null when no cap applies */
  remaining: number | null;
  /** why it is not eligible: the cap that frees last, and when */
  blocked?: { cap_id: string; retry_after_seconds: number | null };
}

export type CheckDecision =
  | { kind: "checked"; verdicts: CheckVerdict[] }
  | { kind: "exempt" }
  | { kind: "fail_open"; error: StoreUnavailableError };

export interface CapUsage {
  /** `total`: one counter for every recipient of the org (SPEC §4); its usage also says what is out on lease */
  counts: "per_recipient" | "total";
  /** total caps: slots held on lease by the instances (spendable by them only), and how many leases */
  leased?: number;
  leases?: number;
  cap_id: string;
  name?: string;
  scope: "channel" | "global";
  channel: string;
  applies_to_categories: string[];
  window_seconds: number;
  enforcement: "enforce" | "shadow";
  max_count: number;
  count: number;
  remaining: number;
  retry_after_seconds: number | null;
}

/** Decides one send against every applicable cap with a single atomic store claim. */
export class CapEngine {
  private readonly claims: Lane<ClaimRequest, ClaimOutcome>;
  private readonly records: Lane<RecordRequest, number[]>;
  private readonly checks: Lane<InspectRequest, CounterReading[]>;
  private readonly releases: Lane<ReleaseRequest, ReleaseAnswer>;
  /** this cap-config's leases on total caps' shared counters */
  readonly totals: TotalLeases;
  /**
   * Per recipient counter hash: settles once the last send of that recipient
   * that waits (for a total cap's slot) has sent its own claim, or was
   * refused. The recipient's later sends claim after it, in arrival order.
   */
  private readonly ownTurns = new Map<string, Promise<void>>();

  constructor(private readonly options: CapEngineOptions) {
    this.totals = new TotalLeases({ access: options.access, leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS });
    this.claims = options.access.lane("claim", (store, items) => store.claim(items));
    this.records = options.access.lane("record", (store, items) => store.record(items));
    this.checks = options.access.lane("check", (store, items) => store.inspect(items));
    this.releases = options.access.lane("release", (store, items) => store.release(items), { bounded: false });
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

  private readonly checkUnderRules = (send: Send, rules: readonly CapRule[], candidates: readonly Candidate[] | undefined): Promise<CheckDecision> => this.checkUnder(send, rules, candidates);

  private checkUnder(send: Send, rules: readonly CapRule[], candidates: readonly Candidate[] | undefined): Promise<CheckDecision> {
    // shadow caps never block, so they play no part in eligibility or remaining
    const enforced = rules.some(isShadow) ? rules.filter((r) => !isShadow(r)) : rules;
    // one recipient for every candidate: its token (an HMAC when hashing) is made once per check
    const recipient = recipientToken(send.recipient, this.options.hmacSecret);
    const counterKey = capCounterKey(this.options.keyPrefix, send.org, recipient);
    // candidates share caps (one campaign, one category): each cap is made once, and each counter read once
    const counters = new Map<string, ApplicableCap>();
    // one instant for every candidate: their calendar caps share one period
    const clock = this.clock();
    // every candidate's caps in one list, candidate i's up to ends[i]: no array per candidate
    const caps: ApplicableCap[] = [];
    const ends: number[] = [];
    if (candidates) {
      // one send for all candidates, each one's attributes and category put in: applicableCaps keeps nothing of it
      const probe: Send = { ...send };
      for (const candidate of candidates) {
        probe.attributes = candidate.attributes;
        probe.category = candidate.category ?? send.category;
        applicableCaps(enforced, probe, this.options.keyPrefix, recipient, clock, counterKey, counters, caps);
        ends.push(caps.length);
      }
    } else {
      applicableCaps(enforced, send, this.options.keyPrefix, recipient, clock, counterKey, counters, caps);
      ends.push(caps.length);
    }
    // total caps are not shared by applicableCaps
    for (const cap of caps) if (!counters.has(cap.field)) counters.set(cap.field, cap);
    if (counters.size === 0) return Promise.resolve({ kind: "checked", verdicts: ends.map(() => ({ eligible: true, remaining: null })) });
    const unique: ApplicableCap[] = [];
    const totals: ApplicableCap[] = [];
    for (const cap of counters.values()) (isTotal(cap) ? totals : unique).push(cap);
    const key = unique[0]?.key;
    // enforced caps are their own counter specs (field, window, max, period): no copy of each counter
    const own = key === undefined ? Promise.resolve<CounterReading[]>([]) : this.options.access.decide(send.org, send.channel, this.checks, { key, counters: unique });
    return Promise.all([own, this.readTotals(send, totals)]).then(([readings, totalReadings]): CheckDecision => {
      if (readings instanceof StoreUnavailableError) return { kind: "fail_open", error: readings };
      if (totalReadings instanceof StoreUnavailableError) return { kind: "fail_open", error: totalReadings };
      const byField = new Map<string, CounterReading>();
      for (let i = 0; i < unique.length; i++) byField.set((unique[i] as ApplicableCap).field, readings[i] as CounterReading);
      for (let i = 0; i < totals.length; i++) byField.set((totals[i] as ApplicableCap).field, totalReadings[i] as CounterReading);
      const verdicts: CheckVerdict[] = [];
      let from = 0;
      for (const end of ends) {
        verdicts.push(verdictOf(caps, from, end, byField));
        from = end;
      }
      return { kind: "checked", verdicts };
    });
  }

  /** Total caps as check mode sees them: a reading at most a quarter second old, this cap-config's own unspent slots counted as free. */
  private async readTotals(send: Send, caps: readonly ApplicableCap[]): Promise<CounterReading[] | StoreUnavailableError> {
    if (caps.length === 0) return [];
    try {
      const readings = await Promise.all(caps.map((cap) => this.totals.read(totalCounter(cap))));
      return readings.map((r) => {
        const count = Math.max(0, r.used + r.leased - r.local);
        const full = count >= r.max;
        return { count, full, retryAfterMs: full ? r.retryAfterMs : null };
      });
    } catch (err) {
      return this.options.access.failed(send.org, send.channel, err);
    }
  }

  private claimUnder(send: Send, rules: readonly CapRule[]): Promise<CapDecision> {
    return this.claimCaps(send, this.capsFor(send, rules));
  }

  private claimCaps(send: Send, caps: ApplicableCap[]): Promise<CapDecision> {
    if (caps.some(isTotal)) return this.claimWithTotals(send, caps);
    // an earlier send of this recipient waits for a total cap's slot: this one claims after it
    const behind = this.ownTurns.size === 0 || caps.length === 0 ? undefined : this.ownTurns.get((caps[0] as ApplicableCap).key);
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
    const call = new ClaimCall(access, send, caps, to, (caps[0] as ApplicableCap).key, send.messageId, claimToken(), counterSpecs(caps));
    access.submitTo(this.claims, call, call);
  }

  /**
   * Total caps beside the recipient's own: a slot of every total cap is
   * reserved from this cap-config's leases first (no round trip while a lease
   * has slots), then the recipient's caps are claimed; a refusal by either
   * gives back what the other took, so a refused send consumes nothing. The
   * total slots are reported spent before the msg may leave.
   */
  private claimWithTotals(send: Send, caps: ApplicableCap[]): Promise<CapDecision> {
    const only = caps.length === 1 ? (caps[0] as ApplicableCap) : undefined;
    if (!only || isShadow(only.rule)) return this.claimTotalsAndOwn(send, caps);
    // one promise per send, settled by plain callbacks: a burst's sends wait here by the tens of thousands, and a
    // promise chain per step (the slot, then the spend's report) would keep each alive through several collections
    return new Promise((resolve, reject) => {
      const limit = quotaOf(only);
      if (this.totals.tryReserve(only.key, limit)) {
        this.spendOnly(send, only, limit, resolve, reject);
        return;
      }
      this.totals.waitFor(only.key, limit, (answer) => {
        if (answer === true) this.spendOnly(send, only, limit, resolve, reject);
        // closed: access.failed throws, for Catch
        else if (answer instanceof StoreUnavailableError) settle((): CapDecision => ({ kind: "fail_open", error: this.options.access.failed(send.org, send.channel, answer) }), resolve, reject);
        else resolve(totalRefusal(only, answer));
      });
    });
  }

  /**
   * One enforced total cap and no other (an ad's budget), its slot reserved:
   * reported spent, then the msg may leave. The general path's answer,
   * without its arrays and frame, which a burst of thousands of sends in
   * flight would each keep while the spends are reported.
   */
  private spendOnly(send: Send, cap: ApplicableCap, limit: QuotaLimit, resolve: (decision: CapDecision) => void, reject: (err: unknown) => void): void {
    const { batch, index } = this.totals.commit(cap.key, limit);
    batch.onDone(() => settle((): CapDecision => {
      const spend = batch.answer(index);
      // closed: access.failed throws, for Catch; open: the msg leaves, with no slot taken to give back
      if (spend instanceof StoreUnavailableError) return { kind: "fail_open", error: this.options.access.failed(send.org, send.channel, spend), totals: [] };
      if ("kind" in spend) return totalRefusal(cap, spend);
      return { kind: "allowed", caps: NO_CAPS, outcome: NO_COUNTERS, attempt: { member: send.messageId, token: 0 }, totals: [{ cap, spend }] };
    }, resolve, reject));
  }

  private async claimTotalsAndOwn(send: Send, caps: ApplicableCap[]): Promise<CapDecision> {
    let own: ApplicableCap[] = NO_CAPS;
    let totals = caps;
    for (const cap of caps) {
      if (isTotal(cap)) continue;
      own = caps.filter((c) => !isTotal(c));
      totals = caps.filter(isTotal);
      break;
    }
    const slots = totals.map((cap) => this.totals.reserve(cap.key, quotaOf(cap)));
    // A slot to wait for (a lease to fetch), or a send of this recipient before it still waiting: the recipient's later
    // sends wait behind this one (its turn), so none claims the recipient's slot first, and this one claims its own caps
    // only once its totals admitted it: a send the totals refuse never holds a slot another send was refused for.
    const key = own.length > 0 ? (own[0] as ApplicableCap).key : undefined;
    const turn = key !== undefined && (slots.some((slot) => slot !== true) || this.ownTurns.has(key)) ? this.takeTurn(key) : undefined;
    try {
      if (turn?.behind) await turn.behind;
      return await this.claimTotalsThenOwn(send, own, totals, slots, turn);
    } finally {
      turn?.done();
    }
  }

  /** Waits its turn behind the recipient's sends before it (ownTurns); `done` lets the sends after it go (called once its own claim is sent, or it was refused). */
  private takeTurn(key: string): { behind: Promise<void> | undefined; done: () => void } {
    const behind = this.ownTurns.get(key);
    let release = (): void => undefined;
    const mine = new Promise<void>((resolve) => { release = resolve; });
    this.ownTurns.set(key, mine);
    let done = false;
    return {
      behind,
      done: () => {
        if (done) return;
        done = true;
        release();
        if (this.ownTurns.get(key) === mine) this.ownTurns.delete(key);
      },
    };
  }

  private async claimTotalsThenOwn(
    send: Send, own: ApplicableCap[], totals: ApplicableCap[], slots: ReturnType<TotalLeases["reserve"]>[], turn: { done: () => void } | undefined,
  ): Promise<CapDecision> {
    const reserved: ApplicableCap[] = [];
    let shadowTotals: ShadowRefusal[] | undefined;
    let refusal: CapDecision | undefined;
    let failure: StoreUnavailableError | undefined;
    for (let i = 0; i < totals.length; i++) {
      const cap = totals[i] as ApplicableCap;
      const slot = slots[i] as ReturnType<TotalLeases["reserve"]>;
      const answer = slot === true ? slot : await slot;
      if (answer === true) reserved.push(cap);
      else if (refusal || failure) continue;
      else if (answer instanceof StoreUnavailableError) failure = answer;
      else if (isShadow(cap.rule)) (shadowTotals ??= []).push({ cap_id: cap.rule.id, count: answer.used + answer.leased, max: cap.max });
      else refusal = totalRefusal(cap, answer);
    }
    if (refusal) {
      this.cancel(reserved);
      // nothing of the recipient's is claimed: its next send may go
      turn?.done();
      return this.withOwnBlocking(own, refusal);
    }
    if (failure) return this.totalsFailed(send, own, failure, reserved, turn);
    let decision: CapDecision | undefined;
    try {
      const claimed = own.length === 0 ? undefined : this.claimCounters(send, own);
      // sent: the recipient's next send may claim now, after this one
      turn?.done();
      decision = await claimed;
    } catch (closed) {
      // fail mode closed: the msg goes to Catch, so the total slots it reserved go back
      this.cancel(reserved);
      throw closed;
    }
    if (decision?.kind === "capped") {
      this.cancel(reserved);
      return decision;
    }
    if (decision?.kind === "allowed" && isRetry(decision)) {
      // a retry of a send already counted (its messageId holds every one of the recipient's counters):
      // the first attempt spent the total slots, so this one takes none (SPEC §2: a retry never takes a second slot)
      this.cancel(reserved);
      return decision;
    }
    // committed together, so one call reports them all; then each is read from its batch
    const tickets: SpendTicket[] = [];
    for (const cap of reserved) tickets.push(this.totals.commit(cap.key, quotaOf(cap)));
    const taken: TotalTaken[] = [];
    let refused: CapDecision | undefined;
    let failed: StoreUnavailableError | undefined;
    for (let i = 0; i < tickets.length; i++) {
      const { batch, index } = tickets[i] as SpendTicket;
      await batch.done;
      const spend = batch.answer(index);
      const cap = reserved[i] as ApplicableCap;
      if (spend instanceof StoreUnavailableError) failed ??= spend;
      // a shadow total never refuses, not even when its lease lapsed and the pool ran dry
      else if ("kind" in spend && isShadow(cap.rule)) (shadowTotals ??= []).push({ cap_id: cap.rule.id, count: spend.used + spend.leased, max: cap.max });
      else if ("kind" in spend) refused ??= totalRefusal(cap, spend);
      else taken.push({ cap, spend });
    }
    if (refused || (failed && this.options.access.failsClosed(failed))) {
      // the lease lapsed and the pool was empty (or, closed, the store failed): the send is not admitted, so it keeps nothing
      await Promise.all(taken.map((t) => this.totals.refund(t.spend).catch(() => false)));
      if (decision) await this.releaseOwn(decision);
      if (refused) return refused;
      throw this.options.access.failed(send.org, send.channel, failed);
    }
    if (failed) {
      // fail mode open: the msg leaves, so every slot it took stays taken and stays on the msg to be given back
      const error = this.options.access.failed(send.org, send.channel, failed);
      if (decision?.kind === "allowed") return { kind: "fail_open", error, caps: decision.caps, attempt: decision.attempt, totals: taken };
      if (decision?.kind === "fail_open") return { ...decision, totals: taken };
      return { kind: "fail_open", error, totals: taken };
    }
    // the recipient's store failed open: the msg leaves, so the total slots it took stay spent, and on the msg to be given back
    if (decision?.kind === "fail_open") return taken.length > 0 ? { ...decision, totals: taken } : decision;
    if (decision && decision.kind !== "allowed") return decision;
    // no counter of the recipient's own: nothing to claim there, so no attempt token is drawn
    const allowed: Extract<CapDecision, { kind: "allowed" }> = decision
      ? { ...decision, totals: taken }
      : { kind: "allowed", caps: own, outcome: NO_COUNTERS, attempt: { member: send.messageId, token: 0 }, totals: taken };
    if (shadowTotals) allowed.shadowTotals = shadowTotals;
    return allowed;
  }

  private cancel(reserved: readonly ApplicableCap[]): void {
    for (const cap of reserved) this.totals.cancel(cap.key);
  }

  /**
   * A send a total cap refused: its own caps, read (not claimed), join the
   * refusal's blocking caps, so retry_after_seconds is the wait until every
   * cap that blocks it frees (SPEC §3), as check mode answers; a retry or a
   * deferral at the total's time alone would be refused again. Unread (the
   * store failed), the total's answer stands.
   */
  private async withOwnBlocking(own: readonly ApplicableCap[], refusal: CapDecision): Promise<CapDecision> {
    const enforced = own.filter((c) => !isShadow(c.rule));
    if (refusal.kind !== "capped" || enforced.length === 0) return refusal;
    const readings = await this.options.access.submit(this.checks, { key: (enforced[0] as ApplicableCap).key, counters: enforced }).catch(() => undefined);
    if (!readings) return refusal;
    const blocking = [...refusal.blocking];
    readings.forEach((reading, i) => {
      const cap = enforced[i] as ApplicableCap;
      if (reading.full) blocking.push({ rule: cap.rule, max: cap.max, count: reading.count, retryAfterMs: cap.max <= 0 ? null : reading.retryAfterMs });
    });
    if (blocking.length === refusal.blocking.length) return refusal;
    // the longest wait first: it names the cap that binds, and frees every other on the way
    blocking.sort((a, b) => rank(b.retryAfterMs) - rank(a.retryAfterMs));
    return { kind: "capped", blocking, retryAfterMs: (blocking[0] as BlockingCap).retryAfterMs };
  }

  /**
   * A total cap's slot could not be had (the store failed): nothing of the
   * totals is kept. Open, the recipient's own caps are still claimed (they
   * may refuse the msg); the msg leaves with that claim on it, to be given
   * back. Closed, nothing is claimed and access.failed throws, for Catch.
   */
  private async totalsFailed(send: Send, own: ApplicableCap[], failure: StoreUnavailableError, reserved: ApplicableCap[], turn: { done: () => void } | undefined): Promise<CapDecision> {
    this.cancel(reserved);
    if (own.length === 0 || this.options.access.failsClosed(failure)) return { kind: "fail_open", error: this.options.access.failed(send.org, send.channel, failure) };
    const claimed = this.claimCounters(send, own);
    turn?.done();
    const decision = await claimed;
    if (decision.kind !== "allowed") return decision;
    return { kind: "fail_open", error: this.options.access.failed(send.org, send.channel, failure), caps: decision.caps, attempt: decision.attempt };
  }

  /** Gives back the recipient's own slots of a claim a total cap refused after all (an admitted one, or one that timed out and may have landed). */
  private async releaseOwn(decision: CapDecision): Promise<void> {
    let taken: ApplicableCap[];
    let attempt: ClaimAttempt;
    if (decision.kind === "allowed") {
      taken = decision.caps.filter((_, i) => {
        const counter = decision.outcome.counters[i];
        return (counter?.alreadyHeld === false || counter?.coHeld === true) && counter.wouldRefuse !== true;
      });
      attempt = decision.attempt;
    } else if (decision.kind === "fail_open" && decision.caps && decision.attempt) {
      taken = decision.caps;
      attempt = decision.attempt;
    } else {
      return;
    }
    const key = taken[0]?.key;
    if (key === undefined) return;
    await this.options.access.submit(this.releases, { kind: "cap", key, member: attempt.member, token: attempt.token, fields: taken.map((c) => c.field) }).catch(() => undefined);
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
    const own = caps.filter((c) => !isTotal(c));
    const key = own[0]?.key;
    const ownCounters = key === undefined ? [] : await this.options.access.callAdmin(async (store) => {
      const [read] = await store.inspect([{ key, counters: counterSpecs(own) }]);
      if (read === undefined || read instanceof StoreUnavailableError) throw read ?? new StoreUnavailableError("error", "no answer");
      return read;
    });
    const totals = new Map<ApplicableCap, TotalReading>();
    await Promise.all(caps.filter(isTotal).map(async (cap) => {
      totals.set(cap, await this.options.access.callAdmin(() => this.totals.read(totalCounter(cap), 0)));
    }));
    return caps.map((cap) => {
      const original = rules.find((r) => r.id === cap.rule.id) as CapRule;
      const total = totals.get(cap);
      if (total) return totalUsage(cap, original, total);
      const counter = ownCounters[own.indexOf(cap)] as { count: number; retryAfterMs: number | null; full: boolean };
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
      read: (cap) => this.options.access.callAdmin(() => this.totals.read(totalCounter(cap), 0)),
    }, org, attributes);
  }

  /** record mode: count the send in every applicable cap without checking (idempotent). */
  async record(send: Send): Promise<{ caps: ApplicableCap[]; counts: number[] } | StoreUnavailableError | "exempt"> {
    if (this.isExempt(send.tier)) return "exempt";
    // rules at hand are used in this turn: no await per msg
    const got = this.rulesOf(send);
    const rules = got instanceof Promise ? await got : got;
    if (rules instanceof StoreUnavailableError) return rules;
    const all = this.capsFor(send, rules);
    const own = all.some(isTotal) ? all.filter((c) => !isTotal(c)) : all;
    // the caps are their own counter specs: a record reads no max and no shadow flag
    const request = own.length === 0 ? undefined : { key: (own[0] as ApplicableCap).key, member: send.messageId, counters: own };
    if (own === all) {
      // no total cap (most records): the one store call, nothing to gather
      if (!request) return { caps: own, counts: [] };
      const counts = await this.options.access.decide(send.org, send.channel, this.records, request);
      return counts instanceof StoreUnavailableError ? counts : { caps: own, counts };
    }
    // a total cap counts the send once more each time it is recorded: it keeps no ids (its memory is bounded)
    const recorded = Promise.all(all.filter(isTotal).map((cap) => this.totals.record(totalCounter(cap))));
    const [counts, spends] = await Promise.all([
      request ? this.options.access.decide(send.org, send.channel, this.records, request) : Promise.resolve<number[]>([]),
      recorded,
    ]);
    if (counts instanceof StoreUnavailableError) return counts;
    const failed = spends.find((s): s is StoreUnavailableError => s instanceof StoreUnavailableError);
    if (failed) return this.options.access.failed(send.org, send.channel, failed);
    return { caps: own, counts };
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

const NO_CAPS: ApplicableCap[] = [];
/** the claim outcome of a send with no counter of the recipient's own (nothing in it is ever written to) */
const NO_COUNTERS: ClaimOutcome = Object.freeze({ allowed: true, nowMs: 0, counters: Object.freeze([]) as unknown as CounterOutcome[] }) as ClaimOutcome;

function isTotal(cap: ApplicableCap): boolean {
  return cap.quota !== undefined;
}

function totalCounter(cap: ApplicableCap): TotalCounter {
  return { key: cap.key, limit: quotaOf(cap) };
}

function quotaOf(cap: ApplicableCap): QuotaLimit {
  return cap.quota as QuotaLimit;
}

/** A send refused by a total cap: it has no slot left for anyone. */
function totalRefusal(cap: ApplicableCap, refusal: TotalRefusal): CapDecision {
  const blocking: BlockingCap = { rule: cap.rule, max: cap.max, count: Math.min(cap.max, refusal.used + refusal.leased), retryAfterMs: refusal.retryAfterMs };
  return { kind: "capped", blocking: [blocking], retryAfterMs: refusal.retryAfterMs };
}

/** Whether an allowed claim found every enforced counter of the recipient's already holding its messageId (a retry). */
function isRetry(decision: Extract<CapDecision, { kind: "allowed" }>): boolean {
  const { caps, outcome } = decision;
  let enforced = 0;
  for (let i = 0; i < caps.length; i++) {
    if (isShadow((caps[i] as ApplicableCap).rule)) continue;
    enforced++;
    if (outcome.counters[i]?.alreadyHeld !== true) return false;
  }
  return enforced > 0;
}

function isShadow(rule: CapRule): boolean {
  return rule.enforcement === "shadow";
}

function counterSpecs(caps: readonly ApplicableCap[]): CounterSpec[] {
  const specs = new Array<CounterSpec>(caps.length);
  for (let i = 0; i < caps.length; i++) specs[i] = counterSpec(caps[i] as ApplicableCap);
  return specs;
}

/** a rolling cap's spec by rule and field, for sends with no recipient limit on it: the same for every such send */
const rollingSpecs = new WeakMap<CapRule, Map<string, Readonly<CounterSpec>>>();
/** fields of one rule kept: a cap split by attribute values has one per value */
const SPECS_KEPT = 1000;

/**
 * A cap's counter spec. Most are shared (a rolling cap, no recipient limit):
 * made once, not for every send, and the store batch tells a run of sends
 * with the same caps by them (redisStore countersArg). Never written to.
 */
function counterSpec(c: ApplicableCap): CounterSpec {
  const shared = c.resetAt === undefined && c.max === c.rule.max_count;
  if (shared) {
    const made = rollingSpecs.get(c.rule)?.get(c.field);
    if (made !== undefined && made.windowMs === c.windowMs) return made;
  }
  // assigned, not spread: a check builds one per counter (58 for 50 ads), and spreads cost more than the rest
  const spec: CounterSpec = { field: c.field, windowMs: c.windowMs, max: c.max };
  if (c.resetAt !== undefined) {
    spec.startMs = c.startMs ?? 0;
    spec.resetAt = c.resetAt;
  }
  if (isShadow(c.rule)) spec.shadow = true;
  if (shared) {
    let byField = rollingSpecs.get(c.rule);
    if (!byField) rollingSpecs.set(c.rule, (byField = new Map()));
    if (byField.size < SPECS_KEPT) byField.set(c.field, Object.freeze(spec));
  }
  return spec;
}

/** A shadow cap that would have refused an admitted send (SPEC §3 `admission.shadow`). */
export interface ShadowRefusal {
  cap_id: string;
  count: number;
  max: number;
}

/** The shadow caps that alone would have refused this admitted send (it took no slot in them), after `more`; undefined when none. */
export function shadowRefusals(caps: readonly ApplicableCap[], outcome: ClaimOutcome, more?: readonly ShadowRefusal[]): ShadowRefusal[] | undefined {
  // an array only when there is one to report: every admitted msg asks
  let refusals: ShadowRefusal[] | undefined;
  const counters = outcome.counters;
  for (let i = 0; i < counters.length; i++) {
    const counter = counters[i] as CounterOutcome;
    const cap = caps[i];
    if (counter.wouldRefuse && cap) (refusals ??= []).push({ cap_id: cap.rule.id, count: counter.count, max: cap.max });
  }
  if (more && more.length > 0) (refusals ??= []).push(...more);
  return refusals;
}

/** One candidate against the readings of its caps, caps[from..end). */
function verdictOf(caps: readonly ApplicableCap[], from: number, end: number, readings: ReadonlyMap<string, CounterReading>): CheckVerdict {
  if (end === from) return { eligible: true, remaining: null };
  let remaining = Number.POSITIVE_INFINITY;
  let binding: ApplicableCap | undefined;
  let bindingRetry: number | null = null;
  for (let i = from; i < end; i++) {
    const cap = caps[i] as ApplicableCap;
    const reading = readings.get(cap.field) as CounterReading;
    remaining = Math.min(remaining, Math.max(0, cap.max - reading.count));
    if (reading.count >= cap.max && (!binding || rank(reading.retryAfterMs) > rank(bindingRetry))) {
      binding = cap;
      bindingRetry = cap.max <= 0 ? null : reading.retryAfterMs;
    }
  }
  if (!binding) return { eligible: true, remaining };
  const retry = bindingRetry === null ? null : Math.max(1, Math.ceil(bindingRetry / 1000));
  return { eligible: false, remaining, blocked: { cap_id: binding.rule.id, retry_after_seconds: retry } };
}

/** Resolves with what `decide` answers, or rejects with what it throws (access.failed, closed). */
function settle<T>(decide: () => T, resolve: (value: T) => void, reject: (err: unknown) => void): void {
  let value: T;
  try {
    value = decide();
  } catch (err) {
    reject(err);
    return;
  }
  resolve(value);
}
