import { carried, ERROR_CODES, type Admission } from "../admission";
import { releaseId } from "../hold/heldIds";
import type { DeferredMsg } from "../hold/heldQueue";

/** The ceiling a throughput-gate judged a msg against, as msg.admission tells it. */
export interface CeilingInfo {
  /** the ceiling's name: org, org/channel or org/value */
  key: string;
  rate: number;
  interval_seconds: number;
  burst: number;
}

interface Ctx {
  gate: string;
  channel: string;
  now: Date;
}

/** ms to seconds, to the ms, rounded up: the exact wait until it conforms, never a little early. */
export function exactSeconds(ms: number): number {
  return Math.ceil(Math.max(0, ms)) / 1000;
}

/** A msg over the ceiling (skip mode, or a wait past maxWait or its expiresAt): skipped, throughput_exceeded. */
export function throughputAdmission(previous: unknown, waitMs: number, ceiling: CeilingInfo, ctx: Ctx, maxWaitMs?: number): Admission {
  const { claims, trail, deferral } = carried(previous);
  trail.push({ gate: ctx.gate, status: "skipped", reason: "throughput_exceeded", at: ctx.now.toISOString() });
  const retry = exactSeconds(waitMs);
  const details = {
    throughput_key: ceiling.key, rate: ceiling.rate, interval_seconds: ceiling.interval_seconds, burst: ceiling.burst,
    retry_after_seconds: retry, channel: ctx.channel, ...(maxWaitMs !== undefined ? { max_wait_seconds: maxWaitMs / 1000 } : {}),
  };
  return {
    status: "skipped", reason: "throughput_exceeded", gate: ctx.gate, claims, trail, ...deferral,
    channel: ctx.channel, retry_after_seconds: retry, throughput_key: ceiling.key,
    error: {
      code: ERROR_CODES.throughput_exceeded,
      message: maxWaitMs === undefined
        ? `over the throughput ceiling of ${ceiling.key} (${ceiling.rate} per ${ceiling.interval_seconds} s, burst ${ceiling.burst})`
        : `the wait for the throughput ceiling of ${ceiling.key} (${retry} s) is longer than the gate's maxWait (${maxWaitMs / 1000} s)`,
      details,
    },
  };
}

/** A msg let through now, or released at its reserved instant (`releaseAt`, epoch ms; with its `releaseId`). */
export function conformingAdmission(
  previous: unknown, ceiling: CeilingInfo, ctx: Omit<Ctx, "channel">, releaseAt?: number, reason?: "fail_open" | "overloaded", releaseId?: string,
): Admission {
  const { claims, trail, deferral } = carried(previous);
  const at = ctx.now.toISOString();
  // built field by field: a throughput-gate writes one per msg, at 10,000 msgs/s
  trail.push(reason ? { gate: ctx.gate, status: "allowed", reason, at } : { gate: ctx.gate, status: "allowed", at });
  const admission: Admission = { status: "allowed", gate: ctx.gate, claims, trail, ...deferral, throughput_key: ceiling.key };
  if (reason) admission.reason = reason;
  if (releaseAt !== undefined) admission.release_at = releaseAt === ctx.now.getTime() ? at : new Date(releaseAt).toISOString();
  if (releaseId !== undefined) admission.release_id = releaseId;
  return admission;
}

/** A held msg dropped by msg.reset: skipped, reset (SPEC §3). */
export function resetAdmission(previous: unknown, ceiling: string, ctx: Omit<Ctx, "channel">): Admission {
  const { claims, trail, deferral } = carried(previous);
  trail.push({ gate: ctx.gate, status: "skipped", reason: "reset", at: ctx.now.toISOString() });
  return {
    status: "skipped", reason: "reset", gate: ctx.gate, claims, trail, ...deferral, throughput_key: ceiling,
    error: { code: ERROR_CODES.reset, message: `dropped by msg.reset while held for the throughput ceiling of ${ceiling}`, details: { throughput_key: ceiling } },
  };
}

/** A re-paced msg was held: whichever way it leaves now, its admission says which holding it was. */
export function withReleaseId(admission: Admission, releaseIdKept: string | undefined): Admission {
  if (releaseIdKept !== undefined) admission.release_id = releaseIdKept;
  return admission;
}

/**
 * The release_id of a held msg: the one it was paced with, kept across a
 * re-pace, so a repeated release is still recognisable (a hash of its entry
 * for one held before release ids were kept beside the msg).
 */
export function releaseIdOf(held: DeferredMsg): string {
  return held.meta?.releaseId ?? releaseId(held);
}

/** What msg.admission says of each ceiling a gate meets: made once per ceiling (most flows pace one or a few), not per msg. */
export class CeilingInfos {
  private readonly infos = new Map<string, CeilingInfo>();

  constructor(private readonly shape: { rate: number; intervalSeconds: number; burst: number }) {}

  of(label: string): CeilingInfo {
    let info = this.infos.get(label);
    if (info === undefined) {
      if (this.infos.size >= 1_000) this.infos.clear();
      info = { key: label, rate: this.shape.rate, interval_seconds: this.shape.intervalSeconds, burst: this.shape.burst };
      this.infos.set(label, info);
    }
    return info;
  }
}
