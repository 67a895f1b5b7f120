import { blockedDecision } from "./capKinds";
import { keepShape } from "../keptShapes";
import type { ApplicableCap, CapDecision, ClaimAttempt, DecisionTo } from "./decisions";
import type { StoreUnavailableError } from "../errors";
import type { Send } from "../send";
import type { Answer } from "../sendQueue/sendQueue";
import type { StoreAccess } from "../store/storeAccess";
import { mayHaveLanded } from "../store/storeFaults";
import type { ClaimOutcome, ClaimRequest, CounterSpec } from "../store/admissionStore";
import type { ClaimHistory } from "../history/claimHistory";

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

  /** the entry the store adds to the recipient's history if it allows the claim (a getter: the attempt prints without it) */
  get history(): ClaimHistory | undefined {
    return this.#send.historyStamp?.claimed(this.#caps);
  }

  resolve(outcome: ClaimOutcome): void {
    let decision: CapDecision;
    try {
      if (outcome.allowed) {
        // historyKept in the literal: a property added after would give every allowed decision a second allocation
        decision = { kind: "allowed", caps: this.#caps, outcome, attempt: this, historyKept: this.#send.historyStamp !== undefined };
      } else {
        decision = blockedDecision(this.#caps, outcome);
      }
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

// never sent: nothing of it is used but its shape (a token is a small integer, as claimToken's are)
keepShape(new ClaimCall({ failed: (_org: string, _channel: string, err: StoreUnavailableError) => err }, {} as Send, [], { decided: () => undefined, failed: () => undefined }, "", "", 1, []));
