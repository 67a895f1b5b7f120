import type { StoreUnavailableError } from "../errors";
import type { CapRule } from "../rules/rules";
import type { ClaimOutcome } from "../store/admissionStore";
import type { QuotaLimit } from "./totals/quotaStep";
import type { TotalSpend } from "./totals/totalLeases";

/*
 * What the cap engine works with and answers: the caps that apply to a send,
 * and the decisions of a claim, a check and a usage read. One file, so the
 * engine's parts import their words from here and never from each other.
 */

/** One cap that gates a given send, with the counter it claims in. */
export interface ApplicableCap {
  rule: CapRule;
  /** the recipient's counter hash */
  key: string;
  /** this cap's counter in it */
  field: string;
  /** min(max_count, recipientLimits[cap]) */
  max: number;
  /** rolling: the window; calendar: the current period's length */
  windowMs: number;
  /** a recipient's calendar caps: the current period, in the send's zone: entries since startMs count, all free at resetAt (a total's period is the store's) */
  startMs?: number;
  resetAt?: number;
  /** a total cap (SPEC §4 counts "total"): `key` is its shared counter, claimed through a lease, not in the recipient's hash */
  quota?: QuotaLimit;
}

/** Where a cap's calendar periods are reckoned: the recipient's zone, else the gate's default. */
export interface CapClock {
  nowMs: number;
  defaultZone: string;
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
  /** caps and outcome are the recipient's own counters; totals the slots taken in total caps, shadowTotals the shadow ones that had none left */
  | { kind: "allowed"; caps: ApplicableCap[]; outcome: ClaimOutcome; attempt: ClaimAttempt; totals?: TotalTaken[]; shadowTotals?: ShadowRefusal[]; /** the store wrote the verdict in the recipient's history with the claim */ historyKept?: boolean }
  | { kind: "capped"; blocking: BlockingCap[]; retryAfterMs: number | null }
  /** caps and attempt are set when the store timed out: the claim may still have landed, so it is recorded to be given back */
  | { kind: "fail_open"; error: StoreUnavailableError; caps?: ApplicableCap[]; attempt?: ClaimAttempt; totals?: TotalTaken[] };

/** The fail mode's answer when the store (or the rules) cannot be had. */
export type FailOpen = { kind: "fail_open"; error: StoreUnavailableError };

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

/** A shadow cap that would have refused an admitted send (SPEC §3 `admission.shadow`). */
export interface ShadowRefusal {
  cap_id: string;
  count: number;
  max: number;
}

/** Who is told a send's decision (CapEngine.claimTo): the decision, or a failure for Catch (the fail mode closed). Never throws. */
export interface DecisionTo {
  decided(decision: CapDecision): void;
  failed(err: unknown): void;
}
