import type { NodeMessage } from "node-red";
import type { Admission } from "../core/admission";
import type { DeferredMsg } from "../core/defer";
import { expiredAdmission, heldAdmission, releasedAdmission } from "../core/deferral/deferralAdmission";
import type { ReleaseHandler } from "../core/deferral/deferrals";
import { planDeferral } from "../core/deferral/deferralPlan";
import { SendFieldError } from "../core/errors";
import { expiryOf, type Send } from "../core/send";
import type { GateStatus } from "./gateStatus";
import { giveBackClaims, prepareRefusal, type AdmittedMsg, type RefusalContext } from "./refusal";

export interface HoldingContext extends RefusalContext {
  deferMaxMs: number;
  /** spread added to the due time, so held demand does not fire at one instant */
  jitterMs: number;
}

/**
 * What of a msg survives the queue: everything a JSON round trip keeps (http
 * req/res objects do not). A msg JSON cannot hold (a circular reference, a
 * BigInt) is that msg's own problem: it goes to Catch, naming why.
 */
export function storedMsg(msg: AdmittedMsg): Record<string, unknown> {
  const { req: _req, res: _res, ...rest } = msg as AdmittedMsg & { req?: unknown; res?: unknown };
  try {
    return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
  } catch (err) {
    throw new SendFieldError("msg", `cannot be held in the defer queue: ${(err as Error).message}`);
  }
}

function firstDeferredAt(admission: Admission): number | undefined {
  const at = admission.first_deferred_at ? Date.parse(admission.first_deferred_at) : Number.NaN;
  return Number.isFinite(at) ? at : undefined;
}

/**
 * A refused msg whose disposition is defer or collapse: hold it in the
 * cap-config's durable queue until `dueAt` (earlier claims given back), or, when
 * it cannot be admitted before its expiresAt or the gate's deferMax, send it out
 * of skipped with defer_expired. Returns true when it was held (nothing to send now).
 */
export async function holdOrExpire(
  ctx: HoldingContext, msg: AdmittedMsg, refusal: Admission, send: Send, dueAt: number | null,
  sendSkipped: (msg: NodeMessage) => void, collapseKey?: string,
): Promise<boolean> {
  const now = Date.now();
  const first = firstDeferredAt(refusal);
  const plan = planDeferral(dueAt, ctx.jitterMs, {
    now, deferMaxMs: ctx.deferMaxMs,
    ...(first !== undefined ? { firstDeferredAt: first } : {}),
    ...(send.expiresAt !== undefined ? { expiresAt: send.expiresAt } : {}),
  });
  if (plan.kind === "expired") {
    const expired = expiredAdmission(refusal, plan.deadline, refusal.reason, { gate: ctx.gate, now: new Date(now) });
    await prepareRefusal(ctx, msg, expired, send);
    sendSkipped(msg);
    return false;
  }
  const held = heldAdmission(refusal, plan.firstDeferredAt);
  // serialised before anything is given back or sent: a msg that cannot be stored goes to Catch as it came
  const stored = storedMsg({ ...msg, admission: held });
  await giveBackClaims(ctx, refusal, send);
  msg.admission = { ...held, claims: refusal.claims, trail: refusal.trail };
  stored.admission = msg.admission;
  // through the send queue: batched with the burst's other holds, under a timeout of its own
  await ctx.service.deferrals.hold({
    id: "", gate: ctx.node.id, dueAt: plan.dueAt, deferrals: held.deferrals ?? 1, firstDeferredAt: plan.firstDeferredAt,
    ...(send.expiresAt !== undefined ? { expiresAt: send.expiresAt } : {}),
    msg: stored,
  }, collapseKey);
  ctx.service.metrics.gate(ctx.node.id, ctx.gate).heldFor(refusal.reason);
  return true;
}

/**
 * Releases a gate's held msgs: out of deferred with status deferred, release_at
 * and deferrals (and `collapsed` when msgs were merged), or out of skipped with
 * defer_expired when its expiresAt passed while it was held.
 */
export function releaseHandler(gate: string, status: GateStatus, emit: (output: "skipped" | "deferred", msg: NodeMessage) => void): ReleaseHandler {
  return (held: DeferredMsg) => {
    const msg = held.msg as AdmittedMsg;
    const now = new Date();
    if (held.collapsed && held.collapsed.length > 0) {
      // a merged msg past its own expiresAt is never released: it leaves by skipped on its own
      const live: Record<string, unknown>[] = [];
      for (const merged of held.collapsed) {
        const expiresAt = expiryOf(merged.expiresAt);
        if (expiresAt === undefined || expiresAt >= now.getTime()) {
          live.push(merged);
          continue;
        }
        const expired = merged as AdmittedMsg;
        expired.admission = expiredAdmission(expired.admission, expiresAt, (expired.admission as Admission | undefined)?.reason, { gate, now });
        status.skipped();
        emit("skipped", expired);
      }
      if (live.length > 0) (msg as AdmittedMsg & { collapsed?: unknown[] }).collapsed = [structuredClone(held.msg), ...live];
    }
    if (held.expiresAt !== undefined && now.getTime() > held.expiresAt) {
      msg.admission = expiredAdmission(msg.admission, held.expiresAt, (msg.admission as Admission | undefined)?.reason, { gate, now });
      status.skipped();
      emit("skipped", msg);
      return;
    }
    msg.admission = releasedAdmission(msg.admission, held.dueAt, { gate, now });
    status.releasedHeld();
    emit("deferred", msg);
  };
}
