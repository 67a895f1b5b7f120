import { carried, deferredSince, ERROR_CODES, type Admission, type AdmissionReason } from "../admission";
import { namesRecord } from "../ownKeys";

export interface DeferralContext {
  gate: string;
  now: Date;
}

/**
 * The admission of a msg the moment gate `gateId` holds it: its claims were
 * given back (any left could not be, and stay on it), and it counts this
 * deferral; `firstDeferredAt` is when this gate first held it.
 */
export function heldAdmission(refusal: Admission, firstDeferredAt: number, gateId: string): Admission {
  const since = deferredSince(refusal.deferred_since) ?? namesRecord<string>();
  if (!Object.hasOwn(since, gateId)) since[gateId] = new Date(firstDeferredAt).toISOString();
  return {
    ...refusal,
    status: "deferred",
    deferrals: (refusal.deferrals ?? 0) + 1,
    first_deferred_at: refusal.first_deferred_at ?? new Date(firstDeferredAt).toISOString(),
    deferred_since: since,
  };
}

/**
 * The admission of a held msg leaving by the deferred output (SPEC §6): status
 * deferred, release_at, deferrals, and release_id (the same if this release is
 * repeated, so a downstream node can drop the repeat).
 */
export function releasedAdmission(held: unknown, releaseAt: number, releaseId: string, ctx: DeferralContext): Admission {
  const previous = (typeof held === "object" && held !== null ? held : {}) as Partial<Admission>;
  const { claims, trail, deferral } = carried(held);
  const at = ctx.now.toISOString();
  trail.push({ gate: ctx.gate, status: "deferred", ...(previous.reason ? { reason: previous.reason } : {}), at });
  return {
    ...previous,
    ...deferral,
    status: "deferred",
    gate: ctx.gate,
    release_at: new Date(releaseAt).toISOString(),
    release_id: releaseId,
    claims,
    trail,
  };
}

/** A msg that can no longer be admitted in time (expiresAt or deferMax): skipped, defer_expired (release_id when it left the queue). */
export function expiredAdmission(previous: unknown, deadline: number, blockedBy: AdmissionReason | undefined, ctx: DeferralContext, releaseId?: string): Admission {
  const { claims, trail, deferral } = carried(previous);
  trail.push({ gate: ctx.gate, status: "skipped", reason: "defer_expired", at: ctx.now.toISOString() });
  const details = {
    deadline: Number.isFinite(deadline) ? new Date(deadline).toISOString() : null,
    ...(blockedBy ? { blocked_by: blockedBy } : {}),
  };
  return {
    status: "skipped",
    reason: "defer_expired",
    gate: ctx.gate,
    ...deferral,
    ...(releaseId !== undefined ? { release_id: releaseId } : {}),
    claims,
    trail,
    error: {
      code: ERROR_CODES.defer_expired,
      message: "the msg cannot be admitted before its expiresAt or the gate's deferMax",
      details,
    },
  };
}
