import { SendFieldError } from "./errors";
import type { HistoryStamp } from "./history/claimHistory";
import { plainTextProblem } from "./plainText";
import { emptyRecord, namesRecord } from "./ownKeys";

/** One outbound send as the gates see it (SPEC §2), after validation. */
export interface Send {
  recipient: string;
  channel: string;
  category?: string;
  tier?: string;
  messageId: string;
  org: string;
  /** no prototype: read it with ownValue */
  attributes: Record<string, string>;
  /** no prototype: read it with ownValue */
  recipientLimits: Readonly<Record<string, number>>;
  /** IANA zone of the recipient (calendar windows, quiet hours); absent: the gate's default */
  timezone?: string;
  /** epoch ms after which a deferred send is never released */
  expiresAt?: number;
  /**
   * set by a gate that keeps a decision history (src/core/history/claimHistory.ts):
   * a claim the store allows writes the verdict's history entry in the same
   * step, in the recipient's counter hash
   */
  historyStamp?: HistoryStamp;
}

/** What the adapter read from the msg, before any checking. */
export interface RawSend {
  recipient: unknown;
  channel: unknown;
  category?: unknown;
  tier?: unknown;
  messageId?: unknown;
  fallbackMessageId?: unknown;
  org?: unknown;
  attributes?: unknown;
  recipientLimits?: unknown;
  timezone?: unknown;
  expiresAt?: unknown;
}

export interface SendRules {
  channels: readonly string[];
  defaultOrg: string;
  requireTier: boolean;
}

/**
 * The longest text a send field may hold (recipient, org, messageId, category,
 * tier, timezone, attribute names and values): these become keys, members and
 * stored values, so a 10 MB recipient must not become a 10 MB key.
 */
export const MAX_FIELD_BYTES = 1024;

/**
 * Refuses a text over MAX_FIELD_BYTES in UTF-8, or one no store keeps as it is
 * (plainText: a NUL, an unpaired surrogate), naming the field; returns it unchanged.
 */
export function boundedText(field: string, value: string): string {
  const problem = boundedTextProblem(value);
  if (problem !== undefined) throw new SendFieldError(field, problem);
  return value;
}

/** What boundedText would refuse the text for, if anything: a caller with many fields names one only when it is bad. */
export function boundedTextProblem(value: string): string | undefined {
  // a UTF-8 byte is at least a third of a UTF-16 unit: only long strings need counting
  if (value.length * 3 > MAX_FIELD_BYTES) {
    const bytes = Buffer.byteLength(value, "utf8");
    if (bytes > MAX_FIELD_BYTES) return `must be at most ${MAX_FIELD_BYTES} bytes (UTF-8), got ${bytes}`;
  }
  return plainTextProblem(value);
}

function absent(value: unknown): boolean {
  return value === undefined || value === null || value === "";
}

function optionalString(field: string, value: unknown): string | undefined {
  if (absent(value)) return undefined;
  if (typeof value !== "string") throw new SendFieldError(field, `must be a string, got ${typeof value}`);
  return boundedText(field, value);
}

function idString(field: string, value: unknown): string | undefined {
  if (absent(value)) return undefined;
  if (typeof value === "string") return boundedText(field, value);
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  throw new SendFieldError(field, `must be a string or number, got ${typeof value}`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Most sends carry no attributes: one empty record for all, never written to. */
const NO_ATTRIBUTES: Record<string, string> = Object.freeze(namesRecord<string>());

/** A send's attributes (SPEC §2), checked: a record of texts that inherits nothing; also the admin API's `attributes` query. */
export function readAttributes(value: unknown): Record<string, string> {
  if (absent(value)) return NO_ATTRIBUTES;
  if (!isPlainObject(value)) throw new SendFieldError("attributes", "must be an object of string values");
  return attributeRecord(value, "attributes");
}

/**
 * The texts of an object of attributes (a send's, or a check's candidate),
 * copied into a record that inherits nothing: numbers read as strings,
 * undefined and null left out, anything else refused naming `field` (and the
 * attribute). Shared by every reader of attributes so all judge them alike.
 */
export function attributeRecord(value: Record<string, unknown>, field: string): Record<string, string> {
  const out = namesRecord<string>();
  for (const name in value) {
    if (!Object.hasOwn(value, name)) continue;
    const v = value[name];
    if (v === undefined || v === null) continue;
    // each field is named only when it is bad: every msg reads its attributes, a check hundreds
    const nameProblem = boundedTextProblem(name);
    if (nameProblem !== undefined) throw new SendFieldError(field, nameProblem);
    if (typeof v === "string") {
      const problem = boundedTextProblem(v);
      if (problem !== undefined) throw new SendFieldError(`${field}.${name}`, problem);
      out[name] = v;
    } else if (typeof v === "number" && Number.isFinite(v)) out[name] = String(v);
    else throw new SendFieldError(`${field}.${name}`, `must be a string, got ${typeof v}`);
  }
  return out;
}

/** Most sends have no limits of their own: one empty record for all (a null-prototype object is a hash table, ~200 bytes each). */
const NO_LIMITS: Readonly<Record<string, number>> = Object.freeze(emptyRecord<number>());

function readRecipientLimits(value: unknown): Readonly<Record<string, number>> {
  if (absent(value)) return NO_LIMITS;
  if (!isPlainObject(value)) throw new SendFieldError("recipientLimits", "must be an object { <cap_id>: count }");
  const out = emptyRecord<number>();
  for (const [capId, v] of Object.entries(value)) {
    boundedText("recipientLimits", capId);
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
      throw new SendFieldError(`recipientLimits.${capId}`, "must be a whole number >= 0");
    }
    out[capId] = v;
  }
  return out;
}

const knownZones = new Map<string, boolean>();

function readTimezone(value: unknown): string | undefined {
  const zone = optionalString("timezone", value);
  if (zone === undefined) return undefined;
  let known = knownZones.get(zone);
  if (known === undefined) {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: zone });
      known = true;
    } catch {
      known = false;
    }
    if (knownZones.size < 1000) knownZones.set(zone, known);
  }
  if (!known) throw new SendFieldError("timezone", `unknown time zone ${JSON.stringify(zone)}`);
  return zone;
}

/** A msg's expiresAt as epoch ms, or undefined when it has none or it cannot be read (never throws). */
export function expiryOf(value: unknown): number | undefined {
  try {
    return readExpiresAt(value);
  } catch {
    return undefined;
  }
}

function readExpiresAt(value: unknown): number | undefined {
  if (absent(value)) return undefined;
  const ms = typeof value === "number" ? value : typeof value === "string" ? (/^\d+$/.test(value) ? Number(value) : Date.parse(value)) : Number.NaN;
  if (!Number.isFinite(ms)) throw new SendFieldError("expiresAt", `must be epoch ms or an ISO time, got ${JSON.stringify(value)}`);
  return ms;
}

/** A send's channel: required, one the cap-config knows. */
export function readChannel(value: unknown, rules: Pick<SendRules, "channels">): string {
  if (absent(value)) throw new SendFieldError("channel", "is required");
  if (typeof value !== "string" || !rules.channels.includes(value)) {
    throw new SendFieldError("channel", `unknown channel ${JSON.stringify(value)} (known: ${rules.channels.join(", ")})`);
  }
  return value;
}

/** A send's org: its own (checked), else the cap-config's default. */
export function sendOrg(value: unknown, rules: Pick<SendRules, "defaultOrg">): string {
  return optionalString("org", value) ?? rules.defaultOrg;
}

/** Checks a raw send against SPEC §2 and returns it typed, or throws naming the field. */
export function parseSend(raw: RawSend, rules: SendRules): Send {
  if (absent(raw.recipient)) throw new SendFieldError("recipient", "is required: set msg.recipient (the stable user id), or point the gate's Recipient property elsewhere");
  if (typeof raw.recipient !== "string") throw new SendFieldError("recipient", `must be a string, got ${typeof raw.recipient}`);
  if (raw.recipient.trim() === "") throw new SendFieldError("recipient", "must not be blank");
  boundedText("recipient", raw.recipient);

  const channel = readChannel(raw.channel, rules);
  const category = optionalString("category", raw.category);
  const tier = optionalString("tier", raw.tier);
  if (rules.requireTier && tier === undefined) throw new SendFieldError("tier", "is required by the cap-config (requireTier)");

  const messageId = idString("messageId", raw.messageId) ?? idString("messageId", raw.fallbackMessageId);
  if (messageId === undefined) throw new SendFieldError("messageId", "is required (msg.messageId or msg._msgid)");

  const org = sendOrg(raw.org, rules);

  // one shape for every send, the optional fields set only when present: spreads of conditional literals made each send twice
  const send: Send = { recipient: raw.recipient, channel, messageId, org, attributes: readAttributes(raw.attributes), recipientLimits: readRecipientLimits(raw.recipientLimits) };
  if (category !== undefined) send.category = category;
  if (tier !== undefined) send.tier = tier;
  const timezone = readTimezone(raw.timezone);
  if (timezone !== undefined) send.timezone = timezone;
  const expiresAt = readExpiresAt(raw.expiresAt);
  if (expiresAt !== undefined) send.expiresAt = expiresAt;
  return send;
}

/**
 * Whose claims a release-mode msg gives back: only its recipient and org are
 * needed (a give-back touches nothing outside the msg's own keys).
 */
export function claimHolder(raw: Pick<RawSend, "recipient" | "org">, rules: Pick<SendRules, "defaultOrg">): { recipient: string; org: string } {
  if (absent(raw.recipient)) throw new SendFieldError("recipient", "is required: set msg.recipient (the stable user id), or point the gate's Recipient property elsewhere");
  if (typeof raw.recipient !== "string") throw new SendFieldError("recipient", `must be a string, got ${typeof raw.recipient}`);
  return { recipient: raw.recipient, org: sendOrg(raw.org, rules) };
}
