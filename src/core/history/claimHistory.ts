import type { ApplicableCap } from "../caps/decisions";
import { encodeKeyPart } from "../caps/keys";
import { fitCaps, gatePart, MAX_AFTER_TIME } from "./historyEntry";

/**
 * A frequency-cap-gate's allowed verdict goes into the recipient's history in
 * the claim's own store step (lua/caps/claim.lua): the hash the claim writes
 * is where the history lives, so it costs the store a field more in a write
 * it makes anyway, and the gate nothing after. The gate stamps each send with
 * what the entry needs beyond the claim (the history's size and lifetime,
 * which gate it is); the claim adds the caps, the store its clock.
 */

/** `<keep>|<lifetime ms>|<gate type>|<gate>`: what a gate's allowed claims all write. */
export function claimStamp(keep: number, lifetimeMs: number, gateType: string, gate: string): string {
  return `${keep}|${lifetimeMs}|${gatePart(gateType, gate)}`;
}

let lastStamp = "";
let lastRoom = 0;

/** The room a stamp leaves its claim's caps: a gate's claims share one stamp, so it is worked out once. */
function capsRoom(stamp: string): number {
  if (stamp !== lastStamp) {
    // after the store's time: `|<gate part>|0||<caps>|` (outcome 0, allowed; no reason, no retry: historyEntry.ts entryText)
    const gatePartLength = stamp.length - stamp.indexOf("|", stamp.indexOf("|") + 1) - 1;
    lastRoom = MAX_AFTER_TIME - gatePartLength - "|0|||".length;
    lastStamp = stamp;
  }
  return lastRoom;
}

/** A claim's history text (ClaimRequest.history): the stamp, then the allowed outcome and the caps claimed (as many as fit: fitCaps). */
export function claimHistoryText(stamp: string, caps: readonly ApplicableCap[]): string {
  let ids = "";
  for (let i = 0; i < caps.length; i++) ids += (i === 0 ? "" : ",") + encodeKeyPart(caps[i].rule.id);
  const room = capsRoom(stamp);
  if (ids.length > room) ids = fitCaps(ids, caps.map((cap) => cap.rule.id), room);
  return `${stamp}|0||${ids}|`;
}

/** A claim's history text read back: how many to keep, for how long, and the entry once the store's now is put before it. */
export function readClaimHistory(text: string): { keep: number; lifetimeMs: number; after: string } | undefined {
  const first = text.indexOf("|");
  const second = first < 0 ? -1 : text.indexOf("|", first + 1);
  if (second < 0) return undefined;
  const keep = Number(text.slice(0, first));
  const lifetimeMs = Number(text.slice(first + 1, second));
  if (!Number.isInteger(keep) || keep < 1 || !Number.isFinite(lifetimeMs)) return undefined;
  return { keep, lifetimeMs, after: text.slice(second) };
}
