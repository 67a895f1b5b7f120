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
  /** the gate's node id */
  gate: string;
  /** the gate's node type */
  gate_type: string;
  outcome: HistoryOutcome;
  reason?: AdmissionReason;
  /** refused: the caps that refused it; allowed by a cap gate: the caps it took a slot in */
  cap_ids?: string[];
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

/** An entry's text from its parts (encodeEntry), made as a gate decides: no entry object on the way. */
export function entryText(
  at: number, gateType: string, gate: string, outcome: HistoryOutcome, reason: string | undefined,
  capIds: readonly string[] | undefined, retryAfterSeconds: number | null | undefined,
): string {
  let caps = "";
  if (capIds) for (let i = 0; i < capIds.length; i++) caps += (i === 0 ? "" : ",") + encodeKeyPart(capIds[i]);
  const retry = retryAfterSeconds === undefined ? "" : retryAfterSeconds === null ? "n" : String(retryAfterSeconds);
  const reasonIndex = reason === undefined ? -1 : REASONS.indexOf(reason as AdmissionReason);
  return `${at.toString(16)}|${gatePart(gateType, gate)}|${OUTCOMES.indexOf(outcome)}|${reasonIndex < 0 ? "" : reasonIndex}|${caps}|${retry}`;
}

let lastGate = "";
let lastType = "";
let lastGatePart = "";

/** `<gate type>|<gate>` encoded: a burst's entries are mostly one gate's, made once. */
export function gatePart(gateType: string, gate: string): string {
  if (gate !== lastGate || gateType !== lastType) {
    const type = (GATE_TYPES as readonly string[]).indexOf(gateType);
    lastGatePart = `${type >= 0 ? type : encodeKeyPart(gateType)}|${encodeKeyPart(gate)}`;
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
  if (caps !== "") entry.cap_ids = caps.split(",").map(decodeKeyPart);
  if (retry === "n") entry.retry_after_seconds = null;
  else if (retry !== "" && Number.isFinite(Number(retry))) entry.retry_after_seconds = Number(retry);
  return entry;
}
