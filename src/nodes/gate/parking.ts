import type { Node, NodeAPI, NodeMessage } from "node-red";
import type { DeferInput, DeferredMsg } from "../../core/hold/heldQueue";
import { expiredAdmission } from "../../core/hold/heldAdmission";
import type { Deferrals } from "../../core/hold/deferrals";
import { parkedMsgId, releaseId } from "../../core/hold/heldIds";
import { GATE_OUTPUTS, type GateOutput } from "../../core/metrics/labels";
import { storedMsg } from "../../core/hold/storedMsg";
import { ABSENT_GATE_KEEP_MS } from "../../core/hold/holdPlan";
import { giveBackClaims, type AdmittedMsg } from "./refusal";

/**
 * Parking: a gate that has begun to close and judges a msg whose output
 * leads to a stopped node (a full deploy stops the whole flow, and Node-RED
 * drops what a stopped node is sent) keeps it in its durable queue, due at
 * once, with the output it was judged for. Its next deployment (a redeploy's
 * new instance, or a restart) sends it by that output, as it is, with a
 * release_id as a held msg has, so a release repeated after a lost ack is
 * recognisable. One parked longer than PARKED_FRESH_MS, or past its
 * expiresAt, leaves by skipped (defer_expired) instead and gives back the
 * claims it carries: its verdict was for then, not now (a quiet hour may have
 * begun, a cap's window moved on).
 */

/** The meta fields of a parked msg. */
const LEAVES_BY = "leavesBy";
const PARKED_AT = "parkedAt";
/** set when the msg's verdict holds however late it leaves (a frequency-cap-gate's record: the send happened) */
const LASTS = "lasts";

/** How long a parked msg's verdict holds: a redeploy or a restart lets it out well within this. */
export const PARKED_FRESH_MS = 60_000;

/** Whose msg it is, as the gate read it: whose claims it gives back, and when it expires. */
export interface Whose {
  org: string;
  recipient: string;
  expiresAt?: number;
  /** when its verdict was made, if before it was parked (a parked msg parked again as its next deployment closes) */
  judgedAt?: number;
}

/** One msg to park: the output it was judged for, and whose it is when the gate read that. */
export interface ParkedItem {
  msg: NodeMessage;
  output: GateOutput;
  whose?: Whose;
}

export type Park = (items: readonly ParkedItem[]) => Promise<void>;

/** The queue entry a parked msg is kept as; `lasts`: its verdict holds however late it leaves. */
export function parkedEntry(gate: string, item: ParkedItem, now: number, lasts = false): DeferInput & { id: string } {
  const { whose } = item;
  const entry: DeferInput & { id: string } = {
    id: parkedMsgId(), gate, dueAt: now, deferrals: 1, firstDeferredAt: now, deadline: now + ABSENT_GATE_KEEP_MS,
    msg: storedMsg(item.msg),
    meta: {
      [LEAVES_BY]: item.output, [PARKED_AT]: String(whose?.judgedAt ?? now), ...(lasts ? { [LASTS]: "1" } : {}),
      ...(whose ? { org: whose.org, recipient: whose.recipient } : {}),
      ...(whose?.expiresAt !== undefined ? { expiresAt: String(whose.expiresAt) } : {}),
    },
  };
  const admission = entry.msg.admission as { release_id?: unknown } | undefined;
  if (admission && typeof admission === "object" && admission.release_id === undefined) admission.release_id = releaseId(entry);
  return entry;
}

/**
 * A gate's Park: its msgs into its durable queue, those of one turn of the
 * loop in one call (Deferrals.handBackInTurn: a burst judged as the gate
 * closes parks thousands). Rejects with why when the store did not take them;
 * the gate then sends them all the same. `lasts`: the gate's verdicts hold
 * however late they leave (PARKED_FRESH_MS).
 */
export function parkInQueue(deferrals: Pick<Deferrals, "handBackInTurn">, gate: string, lasts = false): Park {
  return async (items) => {
    const now = Date.now();
    const failed = await deferrals.handBackInTurn(gate, items.map((item) => ({ entry: parkedEntry(gate, item, now, lasts) })));
    if (failed) throw failed.error;
  };
}

/** The output a parked msg leaves by, or undefined for any other held msg. */
export function parkedOutput(held: DeferredMsg): GateOutput | undefined {
  const output = held.meta?.[LEAVES_BY];
  return (GATE_OUTPUTS as readonly string[]).includes(output ?? "") ? output as GateOutput : undefined;
}

/** A msg on one of a gate's outputs, as node.send takes it. */
export function onOutput(output: GateOutput, msg: NodeMessage): (NodeMessage | null)[] {
  return GATE_OUTPUTS.map((o) => (o === output ? msg : null));
}

/** Whose a parked msg is, as the gate read it when it judged it: should it be parked again, it keeps its expiry and its age. */
export function parkedWhose(held: DeferredMsg): Whose | undefined {
  const meta = held.meta ?? {};
  if (meta.recipient === undefined) return undefined;
  return {
    org: meta.org ?? "", recipient: meta.recipient, judgedAt: Number(meta[PARKED_AT] ?? held.dueAt),
    ...(meta.expiresAt !== undefined ? { expiresAt: Number(meta.expiresAt) } : {}),
  };
}

/**
 * Lets a parked msg out: by the output it was judged for while its verdict
 * holds, else by skipped (defer_expired), with the claims it carries given
 * back. A promise when there are claims to give back, or when `send` gives
 * one (it parks the msg again: the queue acks the entry once that is done).
 */
export function releaseParked(
  ctx: { RED: NodeAPI; node: Node; gate: string }, held: DeferredMsg, output: GateOutput, send: (out: (NodeMessage | null)[]) => void | Promise<void>,
): void | Promise<void> {
  const msg = held.msg as AdmittedMsg;
  const meta = held.meta ?? {};
  const now = Date.now();
  const expiresAt = meta.expiresAt !== undefined ? Number(meta.expiresAt) : Number.POSITIVE_INFINITY;
  const freshUntil = Number(meta[PARKED_AT] ?? held.dueAt) + PARKED_FRESH_MS;
  if (output === "skipped" || meta[LASTS] === "1" || now <= Math.min(expiresAt, freshUntil)) return send(onOutput(output, msg));
  const previous = msg.admission;
  msg.admission = expiredAdmission(previous, Math.min(expiresAt, freshUntil), previous?.reason, { gate: ctx.gate, now: new Date(now) }, previous?.release_id);
  const out = onOutput("skipped", msg);
  if (meta.recipient === undefined || msg.admission.claims.length === 0) return send(out);
  return giveBackClaims(ctx, msg.admission, { recipient: meta.recipient, ...(meta.org !== undefined ? { org: meta.org } : {}) }).then(() => send(out));
}
