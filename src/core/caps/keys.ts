import { createHmac } from "node:crypto";

/** whether a UTF-16 code unit stands for itself in a key: A-Z a-z 0-9 . _ ~ - */
function isSafe(unit: number): boolean {
  return (unit >= 0x61 && unit <= 0x7a) || (unit >= 0x41 && unit <= 0x5a) || (unit >= 0x30 && unit <= 0x39)
    || unit === 0x2e || unit === 0x5f || unit === 0x7e || unit === 0x2d;
}
/** `%XX` of every unit below 0x100, made once: a phone number's `+` is escaped in every key of every send */
const BYTE_ESCAPES = Array.from({ length: 0x100 }, (_, unit) => `%${unit.toString(16).padStart(2, "0")}`);

function escapeUnit(unit: number): string {
  return unit < 0x100 ? BYTE_ESCAPES[unit] : `%u${unit.toString(16).padStart(4, "0")}`;
}

/**
 * Encodes one key component so that it never contains a separator (`:`, `|`)
 * or a hash-tag brace, and so that two different strings never encode alike.
 * Works on UTF-16 code units, so even a lone surrogate has its own encoding:
 * `%XX` for units below 0x100, `%uXXXX` above (the two forms cannot be confused).
 */
export function encodeKeyPart(value: string): string {
  // by runs of safe units, not a regex replace calling back per match: every send encodes its recipient, and a
  // phone number's one `+` makes two pieces
  let out = "";
  let from = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (isSafe(unit)) continue;
    out += value.slice(from, i) + escapeUnit(unit);
    from = i + 1;
  }
  return from === 0 ? value : out + value.slice(from);
}

/** The recipient as it appears in keys: the address itself, or its HMAC when hashing is on. */
export function recipientToken(recipient: string, hmacSecret?: string): string {
  if (hmacSecret === undefined) return recipient;
  return createHmac("sha256", hmacSecret).update(recipient, "utf8").digest("hex");
}

/** Every key of one recipient shares this hash tag, so one claim stays in one cluster slot. */
export function recipientHashTag(org: string, recipient: string): string {
  return `{${encodeKeyPart(org)}|${encodeKeyPart(recipient)}}`;
}

/** `<prefix>:{<org>|<recipient>}`: what every key of one recipient starts with. */
export function recipientKeyBase(prefix: string, org: string, recipient: string): string {
  return `${prefix}:${recipientHashTag(org, recipient)}`;
}

/** `<prefix>:{<org>|` by prefix, then org: made once, not per send (a few orgs send millions) */
const keyHeads = new Map<string, Map<string, string>>();
const HEADS_KEPT = 1000;

function keyHead(prefix: string, org: string): string {
  let byOrg = keyHeads.get(prefix);
  if (!byOrg) {
    // prefixes come from cap-configs: a few, unless deploys keep making new ones
    if (keyHeads.size >= HEADS_KEPT) keyHeads.clear();
    keyHeads.set(prefix, (byOrg = new Map<string, string>()));
  }
  let head = byOrg.get(org);
  if (head === undefined) {
    head = `${prefix}:{${encodeKeyPart(org)}|`;
    // bounded: orgs come from msgs
    if (byOrg.size < HEADS_KEPT) byOrg.set(org, head);
  }
  return head;
}

/** `<prefix>:{<org>|<recipient>}:c`: the hash that holds every cap counter of one recipient (SPEC §5). */
export function capCounterKey(prefix: string, org: string, recipient: string): string {
  return `${keyHead(prefix, org)}${encodeKeyPart(recipient)}}:c`;
}

/**
 * `<cap_id>[:<per values>]`: one cap's counter in the recipient's hash. The
 * parts are encoded, so `:` only separates them and two different (cap, per
 * values) never share a field.
 */
export function capCounterField(capId: string, perValues: readonly string[]): string {
  let field = encodeKeyPart(capId);
  for (const v of perValues) field += `:${encodeKeyPart(v)}`;
  return field;
}

/**
 * `<prefix>:t:{<org>|<cap_id>[:<per values>]}`: a total cap's shared counter
 * (SPEC §4 `counts: "total"`). The `t:` before the tag keeps it apart from
 * every recipient's keys, and the tag holds the whole counter, so on a
 * cluster each total cap (and each of its per values) has its own slot.
 */
export function totalCounterKey(prefix: string, org: string, capId: string, perValues: readonly string[]): string {
  return `${prefix}:t:{${encodeKeyPart(org)}|${capCounterField(capId, perValues)}}`;
}

/** What every total counter key of an org starts with (a give-back may touch no other org's). */
export function totalKeyBase(prefix: string, org: string): string {
  return `${prefix}:t:{${encodeKeyPart(org)}|`;
}
