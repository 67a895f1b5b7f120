import { randomInt } from "node:crypto";

/**
 * A counter entry holds a 32-bit digest of the messageId, not the id itself
 * (4 bytes instead of 36 for a UUID). Two different ids of one counter share a
 * digest with odds of about count / 2^32 per claim (1 in 860 million for a cap
 * of 5): the later send would then pass as a retry of the first and take no
 * slot. FNV-1a over the UTF-16 code units, so every string (lone surrogates
 * included) has one.
 */
export function memberDigest(member: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < member.length; i++) {
    hash ^= member.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** the last token this process handed out, 0..65534; it starts anywhere, so two processes seldom run in step */
let lastToken = randomInt(0, 65535);

/**
 * A claim attempt's token, 1..65535, kept in its entries: a give-back removes
 * only what that attempt added. Tokens run on in turn, so two attempts of one
 * process (two copies of one msg in flight) never share one within 65,535
 * claims: drawn at random, 1 pair in 65,535 did, and that copy then held
 * nothing of the slot it went out on.
 */
export function claimToken(): number {
  lastToken = (lastToken + 1) % 65535;
  return lastToken + 1;
}

/**
 * The last 6 bytes of an entry (the member's digest, then the attempt's
 * token) as the one number the scripts pack them from: a plain decimal
 * argument, which the Redis client writes far faster than a binary one.
 */
export function entryTail(member: string, token: number): number {
  return packTail(memberDigest(member), token);
}

const TOKEN_SPAN = 65536;

/** An entry's tail from its digest and token (what the scripts unpack as 6 bytes). */
export function packTail(digest: number, token: number): number {
  return digest * TOKEN_SPAN + token;
}

export function digestOf(tail: number): number {
  return Math.floor(tail / TOKEN_SPAN);
}

export function tokenOf(tail: number): number {
  return tail % TOKEN_SPAN;
}

/** A record-mode entry belongs to no claim attempt: no give-back removes it. */
export const RECORD_TOKEN = 0;

/** Calendar entries are kept this much longer than their period: a msg in another zone may still count them. */
export const ZONE_SPREAD_MS = 27 * 3_600_000;

/** Keys outlive what they hold by this (SPEC §5: window + 60 s). */
export const EXPIRY_GRACE_MS = 60_000;

/** The first instant an entry counts in a counter, and the first it is still kept, at `now`. */
export function counterBounds(spec: { windowMs: number; startMs?: number; resetAt?: number }, now: number): { from: number; keepFrom: number; until: number } {
  if (spec.resetAt !== undefined && spec.resetAt > 0) {
    return { from: spec.startMs ?? now, keepFrom: now - spec.windowMs - ZONE_SPREAD_MS, until: now + spec.windowMs + ZONE_SPREAD_MS };
  }
  const from = now - spec.windowMs + 1;
  return { from, keepFrom: from, until: now + spec.windowMs };
}
