import { carried, ERROR_CODES, type Admission } from "../admission";

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
