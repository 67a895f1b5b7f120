import type { AdmissionReason } from "../admission";
import { encodeKeyPart } from "../caps/keys";

/** What a gate did with a msg: its own trail entry's status. */
export type HistoryOutcome = "allowed" | "skipped" | "deferred" | "recorded" | "released";

/**
 * One verdict in a recipient's decision history: which gate, when, what it
 * did and why, the caps that decided and when a retry could pass. Nothing of
 * the msg's body or address: the history is keyed by the recipient as the
 * store keys it (its HMAC under hashRecipients).
 */
export interface HistoryEntry {
  /** ms since epoch */
  at: number;
  /** the gate's node id; one longer than Node-RED's own ids is kept as its tag (gateTag) */
  gate: string;
  /** the gate's node type */
  gate_type: string;
  outcome: HistoryOutcome;
  reason?: AdmissionReason;
  /** refused: the caps that refused it; allowed by a cap gate: the caps it took a slot in */
  cap_ids?: string[];
  /** caps the entry had no room for (capsText): cap_ids lists the others */
  cap_ids_left_out?: number;
  retry_after_seconds?: number | null;
}

const GATE_TYPES = ["suppression-gate", "frequency-cap-gate", "quiet-hours-gate", "throughput-gate"] as const;
const OUTCOMES: readonly HistoryOutcome[] = ["allowed", "skipped", "deferred", "recorded", "released"];
/** by their place: an entry holds the index (append only: stored entries keep their meaning) */
const REASONS: readonly AdmissionReason[] = [
  "frequency_capped", "opted_out", "duplicate_content", "quiet_hours", "throughput_exceeded", "defer_expired", "exempt", "fail_open", "overloaded", "reset",
];

/** `%XX` and `%uXXXX` of encodeKeyPart read back. */
export function decodeKeyPart(text: string): string {
  if (!text.includes("%")) return text;
  return text.replace(/%u([0-9a-f]{4})|%([0-9a-f]{2})/g, (_, wide: string | undefined, byte: string | undefined) => String.fromCharCode(Number.parseInt(wide ?? byte ?? "0", 16)));
}

/**
 * An entry as the store keeps it: `at|gate type|gate|outcome|reason|caps|retry`,
 * its time in hex ms, the gate type, outcome and reason by their place in a
 * fixed list and every free text key-encoded (so it holds no `|` or `,`):
 * short enough to fit a small Redis hash's values (lua/lib/counter_entries.lua
 * historyWrites), which JSON would not.
 */
export function encodeEntry(entry: HistoryEntry): string {
  return entryText(entry.at, entry.gate_type, entry.gate, entry.outcome, entry.reason, entry.cap_ids, entry.retry_after_seconds);
}

/**
 * The most an entry holds, its time included. Redis keeps a small hash's
 * values compact (a listpack) while each is at most 64 bytes
 * (hash-max-listpack-value's default): one longer value turns the
 * recipient's whole counter hash into a hashtable, several times its size
 * and slower on every claim. Encoded parts are ASCII: a char is a byte.
 */
export const MAX_ENTRY_BYTES = 64;
/** what may follow an entry's time: the time is 11 hex digits (until the year 2527) and a `|` */
export const MAX_AFTER_TIME = MAX_ENTRY_BYTES - 12;
/** a gate id longer than this (Node-RED's own are 16 hex digits) is kept as its tag (gateTag) */
const MAX_GATE_ID = 16;
/** starts a gate's tag and the count that ends a cut cap list: encodeKeyPart escapes `+`, so no id reads as either */
const SHORTENED = "+";

/** A long gate id's stand-in in an entry: `+` and its FNV-1a hash in base 36 (the API names the deployed gate it stands for). */
export function gateTag(gate: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < gate.length; i++) hash = Math.imul(hash ^ gate.charCodeAt(i), 0x01000193);
  return SHORTENED + (hash >>> 0).toString(36);
}

/**
 * An entry's caps, key-encoded and comma-separated, in at most `room` chars:
 * when they do not all fit, as many as fit and then `+<how many were left
 * out>`. The caps that refused a send are rarely more than one; a claim of
 * many caps with long ids is what gets cut.
 */
export function capsText(capIds: readonly string[], room: number): string {
  let all = "";
  for (let i = 0; i < capIds.length; i++) all += (i === 0 ? "" : ",") + encodeKeyPart(capIds[i]);
  return fitCaps(all, capIds, room);
}

/** capsText of caps already joined as `all` (key-encoded, comma-separated): `all` when it fits, else cut. */
function fitCaps(all: string, capIds: readonly string[], room: number): string {
  if (all.length <= room) return all;
  let kept = "";
  for (let i = 0; ; i++) {
    const next = (i === 0 ? "" : `${kept},`) + encodeKeyPart(capIds[i]);
    // with this cap kept, the count of those after it must still fit (`all` does not, so some are left out)
    if (next.length + `,${SHORTENED}${capIds.length - i - 1}`.length > room) return `${kept}${i === 0 ? "" : ","}${SHORTENED}${capIds.length - i}`;
    kept = next;
  }
}

/** Whether an entry's gate is a long id's tag (gateTag), not the id itself. */
export function isGateTag(gate: string): boolean {
  return gate.startsWith(SHORTENED);
}

/** An entry's text from its parts (encodeEntry), made as a gate decides: no entry object on the way; at most MAX_ENTRY_BYTES. */
export function entryText(
  at: number, gateType: string, gate: string, outcome: HistoryOutcome, reason: string | undefined,
  capIds: readonly string[] | undefined, retryAfterSeconds: number | null | undefined,
): string {
  const retry = retryAfterSeconds === undefined ? "" : retryAfterSeconds === null ? "n" : String(retryAfterSeconds);
  const reasonIndex = reason === undefined ? -1 : REASONS.indexOf(reason as AdmissionReason);
  const head = `${gatePart(gateType, gate)}|${OUTCOMES.indexOf(outcome)}|${reasonIndex < 0 ? "" : reasonIndex}|`;
  const caps = capIds ? capsText(capIds, MAX_AFTER_TIME - head.length - 1 - retry.length) : "";
  return `${at.toString(16)}|${head}${caps}|${retry}`;
}

let lastGate = "";
let lastType = "";
let lastGatePart = "";

/** `<gate type>|<gate>` encoded: a burst's entries are mostly one gate's, made once. */
export function gatePart(gateType: string, gate: string): string {
  if (gate !== lastGate || gateType !== lastType) {
    const type = (GATE_TYPES as readonly string[]).indexOf(gateType);
    const id = encodeKeyPart(gate);
    lastGatePart = `${type >= 0 ? type : encodeKeyPart(gateType)}|${id.length > MAX_GATE_ID ? gateTag(gate) : id}`;
    lastGate = gate;
    lastType = gateType;
  }
  return lastGatePart;
}

/** An entry read back from the store; undefined for text that is not one (written by something else). */
export function decodeEntry(text: string): HistoryEntry | undefined {
  const parts = text.split("|");
  if (parts.length !== 7) return undefined;
  const [at, type, gate, outcome, reason, caps, retry] = parts as [string, string, string, string, string, string, string];
  const atMs = /^[0-9a-f]{1,13}$/.test(at) ? Number.parseInt(at, 16) : Number.NaN;
  const outcomeName = OUTCOMES[Number(outcome)];
  if (!Number.isFinite(atMs) || outcomeName === undefined || outcome === "") return undefined;
  const typeIndex = /^\d+$/.test(type) ? Number(type) : -1;
  const entry: HistoryEntry = { at: atMs, gate: decodeKeyPart(gate), gate_type: GATE_TYPES[typeIndex] ?? decodeKeyPart(type), outcome: outcomeName };
  const reasonName = /^\d+$/.test(reason) ? REASONS[Number(reason)] : undefined;
  if (reasonName !== undefined) entry.reason = reasonName;
  if (caps !== "") {
    const ids = caps.split(",");
    const last = ids[ids.length - 1];
    if (last.startsWith(SHORTENED)) {
      ids.pop();
      entry.cap_ids_left_out = Number(last.slice(1)) || 0;
    }
    if (ids.length > 0) entry.cap_ids = ids.map(decodeKeyPart);
  }
  if (retry === "n") entry.retry_after_seconds = null;
  else if (retry !== "" && Number.isFinite(Number(retry))) entry.retry_after_seconds = Number(retry);
  return entry;
}
