import type { ApplicableCap } from "./applicableCaps";
import type { BlockingCap, CapDecision, ClaimAttempt } from "./capEngine";
import type { StoreUnavailableError } from "../errors";
import type { Send } from "../send";
import type { Answer } from "../sendQueue/sendQueue";
import type { StoreAccess } from "../store/storeAccess";
import { mayHaveLanded } from "../store/storeFaults";
import type { ClaimOutcome, ClaimRequest, CounterSpec } from "../store/admissionStore";

/** Who is told a send's decision (CapEngine.claimTo): the decision, or a failure for Catch (the fail mode closed). Never throws. */
export interface DecisionTo {
  decided(decision: CapDecision): void;
  failed(err: unknown): void;
}

/**
 * One send's claim of its own caps: the request the store is sent (and the
 * attempt its decision keeps), and what turns the store's answer into the
 * send's decision, a failure through the fail mode, told to `to`. One object
 * per send, told by the send queue (StoreAccess.submitTo): a burst's claims
 * each made a request, a promise for the queue's answer and two more for its
 * then and catch. Never throws: the queue tells the answers of a whole batch
 * in one loop.
 */
export class ClaimCall implements ClaimRequest, ClaimAttempt, Answer<ClaimOutcome> {
  // private (#): the call is also the decision's attempt, which reads (and prints, as JSON) as { key, member, token, counters }
  readonly #access: Pick<StoreAccess, "failed">;
  readonly #send: Send;
  readonly #caps: ApplicableCap[];
  /** told the decision; or, when the fail mode is closed (access.failed threw) or the answer could not be read, the failure */
  readonly #to: DecisionTo;

  constructor(
    access: Pick<StoreAccess, "failed">,
    send: Send,
    caps: ApplicableCap[],
    to: DecisionTo,
    /** the recipient's counter hash */
    readonly key: string,
    /** the messageId, and this attempt's token (ClaimRequest) */
    readonly member: string,
    readonly token: number,
    readonly counters: readonly CounterSpec[],
  ) {
    this.#access = access;
    this.#send = send;
    this.#caps = caps;
    this.#to = to;
  }

  resolve(outcome: ClaimOutcome): void {
    let decision: CapDecision;
    try {
      decision = outcome.allowed ? { kind: "allowed", caps: this.#caps, outcome, attempt: this } : blockedDecision(this.#caps, outcome);
    } catch (err) {
      this.#to.failed(err);
      return;
    }
    this.#to.decided(decision);
  }

  reject(err: StoreUnavailableError): void {
    let failure: StoreUnavailableError;
    try {
      failure = this.#access.failed(this.#send.org, this.#send.channel, err);
    } catch (closed) {
      this.#to.failed(closed);
      return;
    }
    // a call that was sent may have been applied (timed out, or its answer lost with the connection): the claim goes on the msg
    this.#to.decided(mayHaveLanded(failure)
      ? { kind: "fail_open", error: failure, caps: this.#caps, attempt: this }
      : { kind: "fail_open", error: failure });
  }
}

/** A refused claim's decision: the caps that block it, the one that frees last first. */
export function blockedDecision(caps: readonly ApplicableCap[], outcome: ClaimOutcome): CapDecision {
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

/** A wait as it orders blocking caps: never (null) is the longest. */
export function rank(retryAfterMs: number | null): number {
  return retryAfterMs === null ? Number.POSITIVE_INFINITY : retryAfterMs;
}
