import { randomBytes } from "node:crypto";
import { sha256Hex } from "../sha256";
import type { DeferredMsg } from "./heldQueue";

function sha256(parts: readonly (string | number)[]): string {
  // JSON keeps the parts apart whatever they contain ("a|b" + "c" is not "a" + "b|c")
  return sha256Hex(JSON.stringify(parts));
}

/**
 * The id a gate holds a msg under: the same (cap-config, gate, org,
 * recipient, channel, messageId) always gets the same id, so a retried hold
 * replaces the held copy instead of holding the msg twice. The recipient is
 * part of it because a split node's parts share one _msgid (the messageId
 * when a msg has none): one audience's msgs would replace each other. Pass
 * the recipient as the store keys it (its HMAC when hashRecipients is on).
 * A hash: it is a key part, and holds no messageId or address.
 */
export function heldMsgId(configId: string, gate: string, send: { org: string; channel: string; messageId: string }, recipientToken: string): string {
  return sha256(["held", configId, gate, send.org, recipientToken, send.channel, send.messageId]);
}

/** this process's part of the paced ids it makes: another process never makes the same id */
const PROCESS_NONCE = randomBytes(6).toString("hex");
let pacedSeq = 0;

/**
 * The id a throughput-gate paces a msg under: one per msg held, so two msgs
 * with one messageId (a retry, a split node's parts of one recipient) are each
 * held and each leave at their own instant; neither replaces the other in the
 * queue (as a cap's deferral does), which would lose one of them at a redeploy
 * while this process still sends both. The ceiling's tag and the reserved
 * instant name it for a reader; this process's nonce and a counter make it
 * unique, also beside a msg restored after a crash that reserved the same
 * instant from a ceiling state saved before it. No hash to compute per msg,
 * and no messageId or address in it.
 */
export function pacedMsgId(tag: string, reservedUs: number): string {
  pacedSeq = (pacedSeq + 1) % Number.MAX_SAFE_INTEGER;
  return `p.${tag}.${reservedUs}.${PROCESS_NONCE}.${pacedSeq.toString(36)}`;
}

/**
 * `msg.admission.release_id` (SPEC §3): the same for every release of one held
 * msg (a release repeated because its ack was lost), different for another
 * msg or another deferral of the same msg. `part` names a msg merged into it
 * that leaves on its own.
 */
export function releaseId(held: Pick<DeferredMsg, "id" | "deferrals" | "dueAt">, part?: number): string {
  return sha256(["release", held.id, held.deferrals, held.dueAt, ...(part === undefined ? [] : [part])]).slice(0, 32);
}

/**
 * The collapse key of a send (SPEC §4): gate, org, recipient and topic. Pass
 * the recipient as the store keys it (its HMAC when hashRecipients is on), so
 * the key holds no address; hashed, so its length is bounded.
 */
export function collapseKeyOf(gate: string, org: string, recipientToken: string, topic: string): string {
  return sha256(["collapse", gate, org, recipientToken, topic]);
}

/** this process's part of the release ids it makes for paced msgs: 64 random bits, so two processes never share one */
const RELEASE_NONCE = randomBytes(8).toString("hex");
let pacedReleaseSeq = 0;

/**
 * The release_id a throughput-gate gives a msg as it paces it, kept beside
 * the msg (meta) so that every release of it says the same: unique like a
 * paced id, and as long as a hashed one (32 hex digits), with no hash to
 * compute per msg.
 */
export function pacedReleaseId(): string {
  pacedReleaseSeq = (pacedReleaseSeq + 1) % Number.MAX_SAFE_INTEGER;
  return `${RELEASE_NONCE}${pacedReleaseSeq.toString(16).padStart(16, "0")}`;
}

let parkedSeq = 0;

/**
 * The id a closing gate keeps a msg under that it could not send (parked for
 * its next deployment): unique, like a paced id. The queue hands out msgs due
 * at one ms in id order, so the sequence has a fixed width: msgs parked in
 * one ms leave in the order they were parked ("z" before "10").
 */
export function parkedMsgId(): string {
  parkedSeq = (parkedSeq + 1) % Number.MAX_SAFE_INTEGER;
  return `k.${PROCESS_NONCE}.${parkedSeq.toString(36).padStart(11, "0")}`;
}
