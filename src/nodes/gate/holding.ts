import type { NodeMessage } from "node-red";
import { deferredSince, httpHeld, type Admission } from "../../core/admission";
import type { DeferredMsg } from "../../core/hold/heldQueue";
import { expiredAdmission, heldAdmission, releasedAdmission } from "../../core/hold/heldAdmission";
import type { ReleaseHandler } from "../../core/hold/deferrals";
import { heldMsgId, releaseId } from "../../core/hold/heldIds";
import { holderMeta } from "../../core/hold/heldListing";
import { HeldOrder } from "../../core/hold/heldOrder";
import { storedCopy, storedMsg } from "../../core/hold/storedMsg";
import { planDeferral, RELEASE_MARGIN_MS } from "../../core/hold/holdPlan";
import { ownValue } from "../../core/ownKeys";
import { sha256Hex } from "../../core/sha256";
import { expiryOf, type Send } from "../../core/send";
import type { GateStatus } from "./status";
import type { Turn } from "./turn";
import { giveBackClaims, prepareRefusal, type AdmittedMsg, type RefusalContext } from "./refusal";

export interface HoldingContext extends RefusalContext {
  /** the cap-config's node id (the held msg's id is derived from it, the gate and the messageId) */
  configId: string;
  deferMaxMs: number;
  /** spread added to the due time, so held demand does not fire at one instant (the same for all of a recipient's msgs) */
  jitterMs: number;
  /** the gate's: keeps each recipient's held msgs in arrival order */
  order: HeldOrder;
}

/**
 * The jitter's draw for one recipient: the same for all its held msgs (a
 * random draw per msg released them in random order), spread over recipients
 * by a hash of gate, org and recipient token.
 */
function recipientJitter(gate: string, org: string, recipientToken: string): () => number {
  const draw = Number.parseInt(sha256Hex(JSON.stringify([gate, org, recipientToken])).slice(0, 12), 16) / 2 ** 48;
  return () => draw;
}

/** When gate `gateId` first held the msg (its deferMax counts from there), if it did. */
function firstDeferredAt(admission: Admission, gateId: string): number | undefined {
  const since = deferredSince(admission.deferred_since);
  const text = since ? ownValue(since, gateId) : undefined;
  const at = text ? Date.parse(text) : Number.NaN;
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
  turn: Pick<Turn, "send" | "answer">, collapseKey?: string,
): Promise<boolean> {
  const now = Date.now();
  const first = firstDeferredAt(refusal, ctx.node.id);
  const recipientToken = ctx.service.recipientToken(send.recipient);
  const plan = planDeferral(dueAt, ctx.jitterMs, {
    now, deferMaxMs: ctx.deferMaxMs,
    ...(first !== undefined ? { firstDeferredAt: first } : {}),
    ...(send.expiresAt !== undefined ? { expiresAt: send.expiresAt } : {}),
  }, ctx.jitterMs > 0 ? recipientJitter(ctx.node.id, send.org, recipientToken) : undefined);
  if (plan.kind === "expired") {
    const expired = expiredAdmission(refusal, plan.deadline, refusal.reason, { gate: ctx.gate, now: new Date(now) });
    await prepareRefusal(ctx, msg, expired, send);
    turn.send([null, msg, null]);
    return false;
  }
  // a recipient's msgs due together leave in the order they came in: each at least 1 ms after the one before
  const due = ctx.order.dueAfter(send.org, recipientToken, plan.dueAt, plan.deadline - RELEASE_MARGIN_MS, now);
  const held = heldAdmission(refusal, plan.firstDeferredAt, ctx.node.id);
  // a collapsed msg released before and come back round: the msgs merged into it are held beside it again, one flat list
  const { collapsed: group, collapsedDropped: groupDropped, ...own } = msg as AdmittedMsg & { collapsed?: unknown; collapsedDropped?: unknown };
  const merged = Array.isArray(group) ? group.slice(1).filter((m): m is Record<string, unknown> => typeof m === "object" && m !== null && !Array.isArray(m)) : [];
  // serialised before anything is given back or sent: a msg that cannot be stored goes to Catch as it came
  const stored = storedMsg({ ...(group === undefined && groupDropped === undefined ? msg : own), admission: held });
  const storedGroup = merged.length > 0 ? storedCopy("msg.collapsed", merged) : undefined;
  await giveBackClaims(ctx, refusal, send);
  // the gate's own entry says what became of the msg: held for later, not skipped
  const entry = refusal.trail[refusal.trail.length - 1];
  if (entry?.status === "skipped" && entry.gate === ctx.gate) entry.status = "deferred";
  msg.admission = { ...held, claims: refusal.claims, trail: refusal.trail };
  stored.admission = msg.admission;
  // through the send queue: batched with the burst's other holds, under a timeout of its own.
  // The id is the msg's own (cap-config, gate, recipient, messageId): a retried hold replaces, never doubles.
  await ctx.service.deferrals.hold({
    id: heldMsgId(ctx.configId, ctx.node.id, send, recipientToken), gate: ctx.node.id, dueAt: due,
    deferrals: held.deferrals ?? 1, firstDeferredAt: plan.firstDeferredAt, deadline: plan.deadline,
    ...(send.expiresAt !== undefined ? { expiresAt: send.expiresAt } : {}),
    ...(storedGroup ? { collapsed: storedGroup } : {}),
    ...(typeof groupDropped === "number" && groupDropped > 0 ? { collapsedDropped: groupDropped } : {}),
    msg: stored,
    // whose it is, as the store keys the recipient: the admin API lists a recipient's held msgs by it
    meta: holderMeta(send.org, recipientToken),
  }, collapseKey !== undefined ? { collapseKey } : {});
  ctx.service.metrics.gate(ctx.node.id, ctx.gate).heldFor(refusal.reason);
  if (ctx.httpResponse && Object.hasOwn(msg, "res")) turn.answer(heldAnswer(msg, due));
  return true;
}

/** HTTP mode: the request of a msg just held, answered at once (202, when it is due), by a msg of its own that carries only the request. */
function heldAnswer(msg: AdmittedMsg, dueAt: number): NodeMessage {
  const reply = httpHeld(msg.admission as Admission, dueAt);
  const { req, res } = msg as AdmittedMsg & { req?: unknown; res?: unknown };
  return { _msgid: msg._msgid, req, res, statusCode: reply.statusCode, headers: reply.headers, payload: reply.payload, admission: msg.admission };
}

/**
 * How late past its deferMax a held msg may still be released: the gates hold
 * a msg due by then at the latest (its jitter stays RELEASE_MARGIN_MS short of
 * it), so this only covers the poller's own lateness. A msg later than that (its
 * gate ran nowhere meanwhile) leaves by skipped.
 */
const DEADLINE_SLACK_MS = 60_000;

/** The limit a held msg has passed (its expiresAt, strictly; its deferMax, past the slack), or undefined. */
function expiredSince(held: DeferredMsg, now: number): number | undefined {
  if (held.expiresAt !== undefined && now > held.expiresAt) return held.expiresAt;
  if (held.deadline !== undefined && now > held.deadline + DEADLINE_SLACK_MS) return held.deadline;
  return undefined;
}

/**
 * Releases a gate's held msgs: out of deferred with status deferred, release_at,
 * deferrals and release_id (and `collapsed` when msgs were merged, with
 * `collapsedDropped` when more were merged than kept), or out of skipped with
 * defer_expired when its deadline (expiresAt or deferMax) passed while it was held.
 */
export function releaseHandler(gate: string, status: GateStatus, emit: (output: "skipped" | "deferred", msg: NodeMessage) => void): ReleaseHandler {
  return (held: DeferredMsg) => {
    const msg = held.msg as AdmittedMsg & { collapsed?: unknown[]; collapsedDropped?: number };
    const now = new Date();
    const id = releaseId(held);
    /** the msgs merged into it that may still go out, with their place in the list (their own release_id part) */
    const live: { merged: Record<string, unknown>; part: number }[] = [];
    (held.collapsed ?? []).forEach((merged, i) => {
      // a merged msg past its own expiresAt is never released: it leaves by skipped on its own
      const expiresAt = expiryOf(merged.expiresAt);
      if (expiresAt === undefined || expiresAt >= now.getTime()) {
        live.push({ merged, part: i + 1 });
        return;
      }
      const expired = merged as AdmittedMsg;
      expired.admission = expiredAdmission(expired.admission, expiresAt, (expired.admission)?.reason, { gate, now }, releaseId(held, i + 1));
      status.skipped();
      emit("skipped", expired);
    });
    const deadline = expiredSince(held, now.getTime());
    if (deadline !== undefined) {
      // the held msg alone is out of time: the msgs merged into it go on, the oldest of them carrying the rest
      const [next, ...rest] = live;
      msg.admission = expiredAdmission(msg.admission, deadline, (msg.admission)?.reason, { gate, now }, id);
      if (!next && held.collapsedDropped) msg.collapsedDropped = held.collapsedDropped;
      status.skipped();
      emit("skipped", msg);
      if (next) emit("deferred", released(next.merged, rest.map((r) => r.merged), held, releaseId(held, next.part), now));
      return;
    }
    emit("deferred", released(msg, live.map((l) => l.merged), held, id, now));
  };

  /** `msg` out of deferred: with the msgs merged into it (`collapsed`, itself first) and the count of those dropped. */
  function released(msg: Record<string, unknown>, merged: Record<string, unknown>[], held: DeferredMsg, id: string, now: Date): NodeMessage {
    const out = msg as AdmittedMsg & { collapsed?: unknown[]; collapsedDropped?: number };
    if (merged.length > 0) out.collapsed = [structuredClone(msg), ...merged];
    if (held.collapsedDropped) out.collapsedDropped = held.collapsedDropped;
    out.admission = releasedAdmission(out.admission, held.dueAt, id, { gate, now });
    status.releasedHeld();
    return out;
  }
}
