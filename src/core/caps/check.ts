import { StoreUnavailableError } from "../errors";
import type { Send } from "../send";
import type { Lane } from "../sendQueue/sendQueue";
import type { CounterReading, InspectRequest } from "../store/admissionStore";
import type { StoreAccess } from "../store/storeAccess";
import type { CapRule } from "../rules/rules";
import { applicableCaps } from "./applicableCaps";
import type { Candidate } from "./candidates";
import { isShadow, isTotal, rank, totalCounter } from "./capKinds";
import type { ApplicableCap, CapClock, CheckDecision, CheckVerdict } from "./decisions";
import { capCounterKey, recipientToken } from "./keys";
import type { TotalLeases } from "./totals/totalLeases";

export interface CapCheckOptions {
  access: StoreAccess;
  keyPrefix: string;
  hmacSecret?: string;
  totals: TotalLeases;
  /** the instance's clock, when one was given (CapEngineOptions.now) */
  clock(): CapClock | undefined;
}

/**
 * check mode (SPEC §5): how each candidate (or, without candidates, the send
 * itself) stands against every cap that applies to it, all read in one store
 * call, nothing claimed.
 */
export class CapCheck {
  private readonly checks: Lane<InspectRequest, CounterReading[]>;

  constructor(private readonly options: CapCheckOptions) {
    this.checks = options.access.lane("check", (store, items, early) => store.inspect(items, early));
  }

  check(send: Send, rules: readonly CapRule[], candidates: readonly Candidate[] | undefined): Promise<CheckDecision> {
    // shadow caps never block, so they play no part in eligibility or remaining
    const enforced = rules.some(isShadow) ? rules.filter((r) => !isShadow(r)) : rules;
    // one recipient for every candidate: its token (an HMAC when hashing) is made once per check
    const recipient = recipientToken(send.recipient, this.options.hmacSecret);
    const counterKey = capCounterKey(this.options.keyPrefix, send.org, recipient);
    // candidates share caps (one campaign, one category): each cap is made once, and each counter read once
    const counters = new Map<string, ApplicableCap>();
    // one instant for every candidate: their calendar caps share one period
    const clock = this.options.clock();
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
      for (let i = 0; i < unique.length; i++) byField.set(unique[i].field, readings[i]);
      for (let i = 0; i < totals.length; i++) byField.set(totals[i].field, totalReadings[i]);
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
      const readings = await Promise.all(caps.map((cap) => this.options.totals.read(totalCounter(cap))));
      return readings.map((r) => {
        const count = Math.max(0, r.used + r.leased - r.local);
        const full = count >= r.max;
        return { count, full, retryAfterMs: full ? r.retryAfterMs : null };
      });
    } catch (err) {
      return this.options.access.failed(send.org, send.channel, err);
    }
  }

}

/** One candidate against the readings of its caps, caps[from..end). */
function verdictOf(caps: readonly ApplicableCap[], from: number, end: number, readings: ReadonlyMap<string, CounterReading>): CheckVerdict {
  if (end === from) return { eligible: true, remaining: null };
  let remaining = Number.POSITIVE_INFINITY;
  let binding: ApplicableCap | undefined;
  let bindingRetry: number | null = null;
  for (let i = from; i < end; i++) {
    const cap = caps[i];
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

