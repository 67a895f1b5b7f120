import { StoreUnavailableError } from "../errors";
import type { Send } from "../send";
import type { Lane } from "../sendQueue/sendQueue";
import type { CounterReading, InspectRequest, ReleaseAnswer, ReleaseRequest } from "../store/admissionStore";
import type { StoreAccess } from "../store/storeAccess";
import { isRetry, isShadow, isTotal, NO_CAPS, NO_COUNTERS, quotaOf, rank, settle, totalRefusal } from "./capKinds";
import type { ApplicableCap, CapDecision, ClaimAttempt, ShadowRefusal, TotalTaken } from "./decisions";
import type { QuotaLimit } from "./totals/quotaStep";
import type { SpendTicket, TotalLeases } from "./totals/totalLeases";

export interface TotalClaimsOptions {
  access: StoreAccess;
  totals: TotalLeases;
  /** the recipient's own caps claimed in one atomic step (CapEngine) */
  claimCounters(send: Send, caps: ApplicableCap[]): Promise<CapDecision>;
  /** reads the recipient's own counters, claiming nothing (a refusal's blocking caps) */
  checks: Lane<InspectRequest, CounterReading[]>;
  releases: Lane<ReleaseRequest, ReleaseAnswer>;
}

/**
 * The send without its history stamp: a total cap may still refuse a send whose own caps the store allowed, so
 * its claim writes no "allowed" in the history; the gate notes the verdict it ends with.
 */
function unstamped(send: Send): Send {
  if (send.historyStamp === undefined) return send;
  const copy = { ...send };
  delete copy.historyStamp;
  return copy;
}

/**
 * The claims of sends with total caps (SPEC §4 counts "total"): slots of
 * shared counters spent from this cap-config's leases, beside the
 * recipient's own caps; a refusal by either gives back what the other took.
 */
export class TotalClaims {
  /**
   * Per recipient counter hash: settles once the last send of that recipient
   * that waits (for a total cap's slot) has sent its own claim, or was
   * refused. The recipient's later sends claim after it, in arrival order.
   */
  readonly ownTurns = new Map<string, Promise<void>>();

  constructor(private readonly options: TotalClaimsOptions) {}

  /**
   * Total caps beside the recipient's own: a slot of every total cap is
   * reserved from this cap-config's leases first (no round trip while a lease
   * has slots), then the recipient's caps are claimed; a refusal by either
   * gives back what the other took, so a refused send consumes nothing. The
   * total slots are reported spent before the msg may leave.
   */
  claim(send: Send, caps: ApplicableCap[]): Promise<CapDecision> {
    const only = caps.length === 1 ? caps[0] : undefined;
    if (!only || isShadow(only.rule)) return this.claimTotalsAndOwn(send, caps);
    // one promise per send, settled by plain callbacks: a burst's sends wait here by the tens of thousands, and a
    // promise chain per step (the slot, then the spend's report) would keep each alive through several collections
    return new Promise((resolve, reject) => {
      const limit = quotaOf(only);
      if (this.options.totals.tryReserve(only.key, limit)) {
        this.spendOnly(send, only, limit, resolve, reject);
        return;
      }
      this.options.totals.waitFor(only.key, limit, (answer) => {
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
    const { batch, index } = this.options.totals.commit(cap.key, limit);
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
    const slots = totals.map((cap) => this.options.totals.reserve(cap.key, quotaOf(cap)));
    // A slot to wait for (a lease to fetch), or a send of this recipient before it still waiting: the recipient's later
    // sends wait behind this one (its turn), so none claims the recipient's slot first, and this one claims its own caps
    // only once its totals admitted it: a send the totals refuse never holds a slot another send was refused for.
    const key = own.length > 0 ? own[0].key : undefined;
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
      const cap = totals[i];
      const slot = slots[i];
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
      const claimed = own.length === 0 ? undefined : this.options.claimCounters(unstamped(send), own);
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
    for (const cap of reserved) tickets.push(this.options.totals.commit(cap.key, quotaOf(cap)));
    const taken: TotalTaken[] = [];
    let refused: CapDecision | undefined;
    let failed: StoreUnavailableError | undefined;
    for (let i = 0; i < tickets.length; i++) {
      const { batch, index } = tickets[i];
      await batch.done;
      const spend = batch.answer(index);
      const cap = reserved[i];
      if (spend instanceof StoreUnavailableError) failed ??= spend;
      // a shadow total never refuses, not even when its lease lapsed and the pool ran dry
      else if ("kind" in spend && isShadow(cap.rule)) (shadowTotals ??= []).push({ cap_id: cap.rule.id, count: spend.used + spend.leased, max: cap.max });
      else if ("kind" in spend) refused ??= totalRefusal(cap, spend);
      else taken.push({ cap, spend });
    }
    if (refused || (failed && this.options.access.failsClosed(failed))) {
      // the lease lapsed and the pool was empty (or, closed, the store failed): the send is not admitted, so it keeps nothing
      await Promise.all(taken.map((t) => this.options.totals.refund(t.spend).catch(() => false)));
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
    for (const cap of reserved) this.options.totals.cancel(cap.key);
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
    const readings = await this.options.access.submit(this.options.checks, { key: enforced[0].key, counters: enforced }).catch(() => undefined);
    if (!readings) return refusal;
    const blocking = [...refusal.blocking];
    readings.forEach((reading, i) => {
      const cap = enforced[i];
      if (reading.full) blocking.push({ rule: cap.rule, max: cap.max, count: reading.count, retryAfterMs: cap.max <= 0 ? null : reading.retryAfterMs });
    });
    if (blocking.length === refusal.blocking.length) return refusal;
    // the longest wait first: it names the cap that binds, and frees every other on the way
    blocking.sort((a, b) => rank(b.retryAfterMs) - rank(a.retryAfterMs));
    return { kind: "capped", blocking, retryAfterMs: blocking[0].retryAfterMs };
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
    const claimed = this.options.claimCounters(unstamped(send), own);
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
    await this.options.access.submit(this.options.releases, { kind: "cap", key, member: attempt.member, token: attempt.token, fields: taken.map((c) => c.field) }).catch(() => undefined);
  }

}
