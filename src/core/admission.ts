import { shadowRefusals } from "./caps/capKinds";
import type { ApplicableCap, CapDecision, ClaimAttempt, ShadowRefusal, TotalTaken } from "./caps/decisions";
import type { StoreUnavailableError } from "./errors";
import { namesRecord } from "./ownKeys";
import type { SuppressionDecision } from "./suppression/suppressionEngine";
import type { CounterOutcome } from "./store/admissionStore";

export type AdmissionStatus = "allowed" | "skipped" | "deferred";
export type AdmissionReason =
  | "frequency_capped" | "opted_out" | "duplicate_content" | "quiet_hours"
  | "throughput_exceeded" | "defer_expired" | "exempt" | "fail_open" | "overloaded" | "reset";

/**
 * What a gate took for a msg, so a later refusal (or `release`) can give it
 * back: slots in caps (the counter fields of the recipient's hash `key` that
 * this attempt, `token`, added to) or a duplicate-content mark (`key`).
 */
export type AdmissionClaim = {
  gate: string;
  /** id of the cap-config whose store holds it */
  config: string;
  store: string;
  member: string;
  key: string;
  at: string;
} & ({ kind: "cap"; token: number; fields: string[]; cap_ids: string[]; /** the fields of shadow caps, when any (SPEC §4: they never refuse) */ shadow_fields?: string[] }
  /** `token`: the attempt that made the mark (absent on claims written before attempt tokens) */
  | { kind: "dup"; token?: string }
  /** a slot of a total cap's shared counter (`key`): spent from `lease`, counted in the time bucket `bucket` */
  | { kind: "total"; lease: string; bucket: number; spend: string; spent_ms: number; cap_ids: string[] });

export interface TrailEntry {
  gate: string;
  status: AdmissionStatus | "released" | "recorded";
  reason?: AdmissionReason;
  /** claims of earlier gates given back because this gate refused the msg */
  refunded?: number;
  at: string;
}

export interface AdmissionError {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** `msg.admission` (SPEC §3). */
export interface Admission {
  status: AdmissionStatus;
  reason?: AdmissionReason;
  gate: string;
  cap_id?: string;
  frequency_cap_id?: string;
  blocking_cap_ids?: string[];
  retry_after_seconds?: number | null;
  channel?: string;
  window_seconds?: number;
  max_count?: number;
  remaining?: number;
  duplicate_of?: string;
  suppression?: { channel: string; reason?: string; at?: string };
  error?: AdmissionError;
  /** deferral (SPEC §6): when the msg was released, how often it was deferred, since when */
  release_at?: string;
  /** a msg released from the defer queue: the same across a repeated release of one held msg */
  release_id?: string;
  deferrals?: number;
  first_deferred_at?: string;
  /** when each gate (by node id) first held the msg: a gate's deferMax counts from its own first hold, not another gate's */
  deferred_since?: Record<string, string>;
  /** the shadow caps that would have refused this admitted msg (SPEC §3, §4 enforcement) */
  shadow?: ShadowRefusal[];
  /** throughput-gate: the ceiling (org, org/channel or org/value) the msg was judged against */
  throughput_key?: string;
  /** the disposition a refusal asked for ("defer", "collapse"), for the adapter that holds the msg */
  disposition?: string;
  claims: AdmissionClaim[];
  trail: TrailEntry[];
}

export const ERROR_CODES: Record<AdmissionReason, string> = {
  frequency_capped: "FREQUENCY_CAP_EXCEEDED",
  opted_out: "RECIPIENT_OPTED_OUT",
  duplicate_content: "DUPLICATE_CONTENT",
  quiet_hours: "QUIET_HOURS",
  throughput_exceeded: "THROUGHPUT_EXCEEDED",
  defer_expired: "DEFER_EXPIRED",
  exempt: "EXEMPT",
  fail_open: "FAIL_OPEN",
  overloaded: "OVERLOADED",
  reset: "RESET",
};

export interface CapGateContext {
  gate: string;
  configId: string;
  storeKind: string;
  channel: string;
  now: Date;
}

type Deferral = Pick<Admission, "deferrals" | "first_deferred_at" | "deferred_since">;
const NOT_DEFERRED: Readonly<Deferral> = Object.freeze({});

/** A msg's deferred_since as read back (a null-prototype copy of its text values), or undefined when it holds none. */
export function deferredSince(value: unknown): Record<string, string> | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  let copy: Record<string, string> | undefined;
  for (const [gate, at] of Object.entries(value)) {
    if (typeof at !== "string") continue;
    copy ??= namesRecord<string>();
    copy[gate] = at;
  }
  return copy;
}

/** What a msg's admission keeps from gate to gate (and round the chain after a deferral). */
export function carried(previous: unknown): { claims: AdmissionClaim[]; trail: TrailEntry[]; deferral: Readonly<Deferral> } {
  // the first gate of a chain (most msgs): nothing to carry
  if (typeof previous !== "object" || previous === null) return { claims: [], trail: [], deferral: NOT_DEFERRED };
  const prev = previous as Partial<Admission>;
  const deferrals = typeof prev.deferrals === "number" ? prev.deferrals : undefined;
  const since = typeof prev.first_deferred_at === "string" ? prev.first_deferred_at : undefined;
  let deferral: Readonly<Deferral> = NOT_DEFERRED;
  if (deferrals !== undefined && since !== undefined) deferral = { deferrals, first_deferred_at: since };
  else if (deferrals !== undefined) deferral = { deferrals };
  else if (since !== undefined) deferral = { first_deferred_at: since };
  const byGate = prev.deferred_since === undefined ? undefined : deferredSince(prev.deferred_since);
  if (byGate) deferral = { ...deferral, deferred_since: byGate };
  return {
    claims: Array.isArray(prev.claims) ? prev.claims.slice() : [],
    trail: Array.isArray(prev.trail) ? prev.trail.slice() : [],
    deferral,
  };
}

let isoMs = Number.NaN;
let isoText = "";

/** `at` as an ISO string; the msgs of one burst share a millisecond, and its string. */
export function isoAt(at: Date): string {
  const ms = at.getTime();
  if (ms !== isoMs) {
    isoText = at.toISOString();
    isoMs = ms;
  }
  return isoText;
}

export function seconds(ms: number | null): number | null {
  return ms === null ? null : Math.max(1, Math.ceil(ms / 1000));
}

const fieldOf = (cap: ApplicableCap): string => cap.field;
const capIdOf = (cap: ApplicableCap): string => cap.rule.id;

/** The claim of slots in some caps' counters, to be given back by `release`. */
function capClaim(ctx: CapGateContext, caps: readonly ApplicableCap[], attempt: ClaimAttempt, at: string): AdmissionClaim {
  const claim: AdmissionClaim = {
    gate: ctx.gate, kind: "cap", config: ctx.configId, store: ctx.storeKind, member: attempt.member, token: attempt.token,
    key: caps[0].key, fields: caps.map(fieldOf), cap_ids: caps.map(capIdOf), at,
  };
  // a give-back tells a retry's slots by the enforced caps alone, as the claim did (claims.ts totalsStay)
  let shadow: string[] | undefined;
  for (let i = 0; i < caps.length; i++) {
    const cap = caps[i];
    if (cap.rule.enforcement === "shadow") (shadow ??= []).push(cap.field);
  }
  if (shadow) claim.shadow_fields = shadow;
  return claim;
}

/** The slot a send took in a total cap, to be given back by `release` or a later refusal. */
function totalClaim(ctx: CapGateContext, { cap, spend }: TotalTaken, member: string, at: string): AdmissionClaim {
  return { gate: ctx.gate, kind: "total", config: ctx.configId, store: ctx.storeKind, member, key: spend.key, lease: spend.lease, bucket: spend.bucket, spend: spend.id, spent_ms: spend.atMs, cap_ids: [cap.rule.id], at };
}

/** A store failure's reason on the msg: the send queue was full, or the store failed. */
export function failReason(error: StoreUnavailableError): "overloaded" | "fail_open" {
  return error.kind === "overloaded" ? "overloaded" : "fail_open";
}

/** The msg.admission a frequency-cap gate writes for its decision, keeping earlier gates' claims and trail. */
export function capAdmission(decision: CapDecision, previous: unknown, ctx: CapGateContext): Admission {
  const at = isoAt(ctx.now);
  if (decision.kind === "allowed") return allowedCapAdmission(decision, previous, ctx, at);
  const { claims, trail, deferral } = carried(previous);

  switch (decision.kind) {
    case "exempt":
    case "fail_open": {
      // a claim that timed out may still have landed in Redis: record it, so a later refusal or release gives it back
      if (decision.kind === "fail_open" && decision.caps && decision.attempt && decision.caps.length > 0) {
        claims.push(capClaim(ctx, decision.caps, decision.attempt, at));
      }
      if (decision.kind === "fail_open") for (const taken of decision.totals ?? []) claims.push(totalClaim(ctx, taken, decision.attempt?.member ?? "", at));
      const reason = decision.kind === "exempt" ? "exempt" : failReason(decision.error);
      trail.push({ gate: ctx.gate, status: "allowed", reason, at });
      return { status: "allowed", reason, gate: ctx.gate, claims, trail, ...deferral };
    }
    case "capped": {
      const binding = decision.blocking[0];
      if (!binding) throw new Error("capped decision without a blocking cap");
      const retry = seconds(decision.retryAfterMs);
      const details = {
        cap_id: binding.rule.id,
        retry_after_seconds: retry,
        channel: ctx.channel,
        window_seconds: binding.rule.window_seconds,
        max_count: binding.max,
      };
      trail.push({ gate: ctx.gate, status: "skipped", reason: "frequency_capped", at });
      return {
        status: "skipped",
        reason: "frequency_capped",
        gate: ctx.gate, claims, trail, ...deferral,
        cap_id: binding.rule.id,
        frequency_cap_id: binding.rule.id,
        blocking_cap_ids: decision.blocking.map((b) => b.rule.id),
        retry_after_seconds: retry,
        channel: ctx.channel,
        window_seconds: binding.rule.window_seconds,
        max_count: binding.max,
        disposition: binding.rule.disposition,
        error: {
          code: ERROR_CODES.frequency_capped,
          message: `recipient reached cap "${binding.rule.id}" (${binding.max} per ${binding.rule.window_seconds} s)`,
          details,
        },
      };
    }
  }
}

/**
 * An allowed claim's admission. Every msg that passes comes here, and its
 * admission outlives it on a msg older than itself (a burst's msgs wait in
 * the intake), so the garbage collector copies all of it at least once: loops
 * and exact-size arrays (an array grown by push holds room for 17), not
 * spreads, temporaries and closures.
 */
function allowedCapAdmission(decision: Extract<CapDecision, { kind: "allowed" }>, previous: unknown, ctx: CapGateContext, at: string): Admission {
  const { caps, outcome } = decision;
  const counters = outcome.counters;
  // only slots taken now, or held with the attempt that took them (coHeld), are this msg's to give back: a
  // retry of a send that went out holds nothing, and a shadow cap that would have refused took none
  let taken = 0;
  // free slots of the enforced caps: shadow caps never stop a send
  let remaining: number | undefined;
  for (let i = 0; i < caps.length; i++) {
    const cap = caps[i];
    if (slotTaken(counters[i])) taken++;
    if (cap.rule.enforcement === "shadow") continue;
    const left = Math.max(0, cap.max - (counters[i]?.count ?? 0));
    remaining = remaining === undefined ? left : Math.min(remaining, left);
  }
  const capsTaken = taken === caps.length ? caps : caps.filter((_, i) => slotTaken(counters[i]));
  const claim = taken > 0 ? capClaim(ctx, capsTaken, decision.attempt, at) : undefined;
  const entry: TrailEntry = { gate: ctx.gate, status: "allowed", at };
  const totals = decision.totals;
  let admission: Admission;
  if ((typeof previous !== "object" || previous === null) && !totals) {
    // the first gate of a chain (most msgs): nothing to carry; remaining in the literal, not added after (a larger copy)
    admission = remaining === undefined
      ? { status: "allowed", gate: ctx.gate, claims: claim ? [claim] : [], trail: [entry] }
      : { status: "allowed", gate: ctx.gate, claims: claim ? [claim] : [], trail: [entry], remaining };
  } else {
    const { claims, trail, deferral } = carried(previous);
    if (claim) claims.push(claim);
    trail.push(entry);
    if (totals) for (let i = 0; i < totals.length; i++) claims.push(totalClaim(ctx, totals[i], decision.attempt.member, at));
    admission = { status: "allowed", gate: ctx.gate, claims, trail };
    if (deferral.deferrals !== undefined) admission.deferrals = deferral.deferrals;
    if (deferral.first_deferred_at !== undefined) admission.first_deferred_at = deferral.first_deferred_at;
    if (deferral.deferred_since !== undefined) admission.deferred_since = deferral.deferred_since;
  }
  if (remaining !== undefined && admission.remaining === undefined) admission.remaining = remaining;
  const shadow = shadowRefusals(caps, outcome, decision.shadowTotals);
  if (shadow) admission.shadow = shadow;
  return admission;
}

function slotTaken(counter: CounterOutcome | undefined): boolean {
  return (counter?.alreadyHeld === false || counter?.coHeld === true) && counter.wouldRefuse !== true;
}

/** The msg.admission the suppression-gate writes for its decision. */
export function suppressionAdmission(decision: SuppressionDecision, previous: unknown, ctx: CapGateContext): Admission {
  const { claims, trail, deferral } = carried(previous);
  const at = isoAt(ctx.now);
  const base = { gate: ctx.gate, claims, trail, ...deferral };
  switch (decision.kind) {
    case "fail_open": {
      const reason = failReason(decision.error);
      if (decision.markKey !== undefined && decision.member !== undefined) {
        claims.push({ gate: ctx.gate, kind: "dup", config: ctx.configId, store: ctx.storeKind, member: decision.member, key: decision.markKey, ...(decision.token !== undefined ? { token: decision.token } : {}), at });
      }
      trail.push({ gate: ctx.gate, status: "allowed", reason, at });
      return { status: "allowed", reason, ...base };
    }
    case "clear":
      if (decision.markKey !== undefined) {
        claims.push({ gate: ctx.gate, kind: "dup", config: ctx.configId, store: ctx.storeKind, member: decision.member, key: decision.markKey, ...(decision.token !== undefined ? { token: decision.token } : {}), at });
      }
      trail.push({ gate: ctx.gate, status: "allowed", at });
      return { status: "allowed", ...base };
    case "opted_out": {
      const suppression = {
        channel: decision.entry.channel,
        ...(decision.entry.reason !== undefined ? { reason: decision.entry.reason } : {}),
        ...(decision.entry.at !== undefined ? { at: decision.entry.at } : {}),
      };
      trail.push({ gate: ctx.gate, status: "skipped", reason: "opted_out", at });
      return {
        status: "skipped", reason: "opted_out", ...base, channel: ctx.channel, suppression,
        error: { code: ERROR_CODES.opted_out, message: `recipient is on the block list for ${suppression.channel === "*" ? "every channel" : suppression.channel}`, details: { channel: ctx.channel, suppression } },
      };
    }
    case "duplicate": {
      const retry = seconds(decision.retryAfterMs);
      trail.push({ gate: ctx.gate, status: "skipped", reason: "duplicate_content", at });
      return {
        status: "skipped", reason: "duplicate_content", ...base, channel: ctx.channel, duplicate_of: decision.firstMember,
        retry_after_seconds: retry,
        error: { code: ERROR_CODES.duplicate_content, message: `the same content already went to this recipient on ${ctx.channel} (${decision.firstMember})`, details: { channel: ctx.channel, duplicate_of: decision.firstMember, retry_after_seconds: retry } },
      };
    }
  }
}

/** The msg.admission of a send inside its recipient's quiet window (allowed ones use allowedAdmission). */
export function quietAdmission(previous: unknown, untilMs: number, disposition: string, ctx: { gate: string; channel: string; now: Date }): Admission {
  const { claims, trail, deferral } = carried(previous);
  const at = isoAt(ctx.now);
  const retry = Number.isFinite(untilMs) ? seconds(untilMs - ctx.now.getTime()) : null;
  const quietUntil = Number.isFinite(untilMs) ? new Date(untilMs).toISOString() : null;
  trail.push({ gate: ctx.gate, status: "skipped", reason: "quiet_hours", at });
  return {
    status: "skipped", reason: "quiet_hours", gate: ctx.gate, claims, trail, ...deferral,
    channel: ctx.channel, retry_after_seconds: retry, disposition,
    error: {
      code: ERROR_CODES.quiet_hours,
      message: quietUntil ? `the recipient is in quiet hours until ${quietUntil}` : "the recipient is always in quiet hours",
      details: { channel: ctx.channel, retry_after_seconds: retry, quiet_until: quietUntil },
    },
  };
}

/** An allowed verdict of a gate that claims nothing (quiet hours, a check), with an optional reason (exempt, a failed store). */
export function allowedAdmission(previous: unknown, ctx: { gate: string; now: Date }, reason?: "exempt" | "fail_open" | "overloaded"): Admission {
  const { claims, trail, deferral } = carried(previous);
  trail.push({ gate: ctx.gate, status: "allowed", ...(reason ? { reason } : {}), at: isoAt(ctx.now) });
  return { status: "allowed", gate: ctx.gate, claims, trail, ...deferral, ...(reason ? { reason } : {}) };
}

/** After a refusal gave back earlier gates' claims: they are no longer held, and the trail says how many. */
export function markRefunded(admission: Admission, refunded: number): void {
  admission.claims = [];
  const last = admission.trail[admission.trail.length - 1];
  if (last) last.refunded = refunded;
}

/**
 * The HTTP status of a refusal (SPEC §3): 429 with Retry-After for what a
 * retry later can pass (a cap, a ceiling, a quiet window); a refusal no retry
 * fixes says so, so a client stops retrying: 403 for an opted-out recipient
 * or a cap that never frees (a recipient limit of 0), 409 for a duplicate
 * body, 410 for a msg that could not be admitted before its deadline.
 */
export function httpStatusOf(admission: Pick<Admission, "reason" | "retry_after_seconds">): number {
  switch (admission.reason) {
    case "opted_out":
      return 403;
    case "duplicate_content":
      return 409;
    case "defer_expired":
      return 410;
    default:
      return admission.retry_after_seconds === null ? 403 : 429;
  }
}

/** The HTTP reply of a refused send (SPEC §3 HTTP mode), for an `http response` node. */
export function httpRefusal(admission: Admission): { statusCode: number; headers: Record<string, string>; payload: unknown } {
  const code = admission.error?.code ?? (admission.reason ? ERROR_CODES[admission.reason] : "REFUSED");
  const headers: Record<string, string> = {};
  const statusCode = httpStatusOf(admission);
  // the header takes whole seconds (RFC 9110); the throughput-gate's exact wait (0.1 s) stays in the body
  if (statusCode === 429 && typeof admission.retry_after_seconds === "number") headers["Retry-After"] = String(Math.ceil(admission.retry_after_seconds));
  return { statusCode, headers, payload: { error: code, details: admission.error?.details ?? {} } };
}

/**
 * The HTTP reply of a msg held for later (SPEC §3): 202 Accepted at once,
 * with when it is due; the held msg itself carries no req/res, so its
 * release answers nothing a second time.
 */
export function httpHeld(admission: Admission, dueAt: number): { statusCode: number; headers: Record<string, string>; payload: unknown } {
  const releaseAt = new Date(dueAt).toISOString();
  const waitSeconds = Math.max(0, Math.ceil((dueAt - Date.now()) / 1000));
  return {
    statusCode: 202,
    headers: { "Retry-After": String(waitSeconds) },
    payload: { status: "deferred", reason: admission.reason ?? null, release_at: releaseAt, deferrals: admission.deferrals ?? 1 },
  };
}
