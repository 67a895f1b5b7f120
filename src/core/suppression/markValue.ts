import { randomBytes } from "node:crypto";

/**
 * A duplicate-content mark holds the messageId of the msg that made it and
 * that attempt's token, apart by a NUL (a messageId never holds one: plainText
 * refuses it). The messageId tells a retry from a duplicate; the token tells
 * whose mark it is to give back: a timed-out retry's give-back must not delete
 * the mark of the attempt that went out. A mark written before tokens is the
 * bare messageId.
 */
const SEPARATOR = "\u0000";

/** this process's part of the tokens it makes, and a counter: no two attempts share one */
const NONCE = randomBytes(4).toString("hex");
let made = 0;

/** A fresh attempt token. */
export function markToken(): string {
  made = (made + 1) % Number.MAX_SAFE_INTEGER;
  return `${NONCE}${made.toString(36)}`;
}

/** The value a mark made by `member`'s attempt `token` holds (the bare member when there is no token). */
export function markValue(member: string, token: string | undefined): string {
  return token === undefined ? member : `${member}${SEPARATOR}${token}`;
}

/** The messageId a mark's value names. */
export function markMember(value: string): string {
  const at = value.indexOf(SEPARATOR);
  return at < 0 ? value : value.slice(0, at);
}

/** The tokens of the attempts that hold a mark (its value: messageId, then NUL and a token per attempt: lua/suppression.lua). */
export function markTokens(value: string): string[] {
  const at = value.indexOf(SEPARATOR);
  return at < 0 ? [] : value.slice(at + 1).split(SEPARATOR);
}

/** A mark's value with another attempt of its messageId (a copy of the msg) holding it too. */
export function joinedMark(value: string, token: string): string {
  return `${value}${SEPARATOR}${token}`;
}

/**
 * A mark's value once the attempt `given` (messageId NUL token, or a bare
 * messageId) gives it back: "" when no attempt holds it any more (the mark
 * goes), undefined when that attempt held none of it (lua/release.lua).
 */
export function withoutMarkToken(value: string, given: string): string | undefined {
  if (value === given) return "";
  const at = given.indexOf(SEPARATOR);
  if (at < 0 || markMember(value) !== given.slice(0, at)) return undefined;
  const tokens = markTokens(value);
  const index = tokens.indexOf(given.slice(at + 1));
  if (index < 0) return undefined;
  tokens.splice(index, 1);
  return tokens.length === 0 ? "" : `${given.slice(0, at)}${SEPARATOR}${tokens.join(SEPARATOR)}`;
}
