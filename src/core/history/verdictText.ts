import type { Admission } from "../admission";
import { entryText } from "./historyEntry";

let lastText = "";
let lastMs = Number.NaN;

/** An ISO time as ms: the msgs of a burst share their verdict's millisecond, and its text (admission.ts isoAt). */
function msOf(text: string): number {
  if (text !== lastText) {
    lastText = text;
    lastMs = Date.parse(text);
  }
  return lastMs;
}

/**
 * The history entry (encoded, historyEntry.ts) of the verdict a gate (node
 * `gateId` of type `gateType`) just wrote on a msg: its own trail entry (the
 * last one: every gate writes one as it decides), the caps that decided (those
 * that refused it, or those it took slots in) and when a retry could pass.
 * Undefined when the last entry is not this gate's (the gate wrote no verdict).
 * Made for every msg of a burst: no objects on the way.
 */
export function verdictText(admission: Partial<Admission> | undefined, gateId: string, gateType: string, nowMs: number): string | undefined {
  const trail = admission?.trail;
  if (!Array.isArray(trail) || trail.length === 0) return undefined;
  const last = trail[trail.length - 1];
  if (last?.gate !== gateType) return undefined;
  const parsed = msOf(last.at);
  const at = Number.isFinite(parsed) ? parsed : nowMs;
  if (last.status === "skipped" || last.status === "deferred") {
    // the refusal's details are the admission's own when this gate refused it
    if (admission?.gate !== gateType) return entryText(at, gateType, gateId, last.status, last.reason, undefined, undefined);
    const caps = admission.blocking_cap_ids ?? (admission.cap_id !== undefined ? [admission.cap_id] : undefined);
    return entryText(at, gateType, gateId, last.status, last.reason, caps, admission.retry_after_seconds);
  }
  let caps: readonly string[] | undefined;
  if (last.status === "allowed" && Array.isArray(admission?.claims)) {
    // the claims this verdict made: its gate's, made at its time (a total cap's beside a cap claim)
    for (const claim of admission.claims) {
      if (claim.gate !== gateType || claim.at !== last.at || claim.kind === "dup") continue;
      caps = caps === undefined ? claim.cap_ids : [...caps, ...claim.cap_ids];
    }
  }
  return entryText(at, gateType, gateId, last.status, last.reason, caps, undefined);
}
