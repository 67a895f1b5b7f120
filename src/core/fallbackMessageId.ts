import { sha256Hex } from "./sha256";

/** What a payload says, as text for the digest: a Buffer's bytes, a string itself, anything else its JSON. */
function payloadText(payload: unknown): string {
  if (typeof payload === "string") return payload;
  if (Buffer.isBuffer(payload)) return `buffer:${payload.toString("base64")}`;
  try {
    return `json:${JSON.stringify(payload) ?? typeof payload}`;
  } catch {
    // a circular or BigInt payload: its _msgid alone tells it from its siblings no worse than before
    return `unserialisable:${typeof payload}`;
  }
}

/**
 * The messageId of a msg that names none (SPEC §2 falls back to `_msgid`).
 * Node-RED gives every msg of one `send()` the same `_msgid` (a function node
 * returning an array of msgs, or msgs copied from the one it got), so the
 * `_msgid` alone took a function node's second notification to a recipient
 * for a retry of the first: it passed a cap of 1 without taking a slot, and a
 * deferral held only the last of them. The fallback is the `_msgid` with a
 * digest of everything the gate reads of the send (recipient, channel,
 * category, attributes, payload, topic): a clone or a retry of a msg says the
 * same, a sibling differs in one of them.
 * Anything but a string `_msgid` is returned as it is (the send's checks name it).
 */
export function fallbackMessageId(msgid: unknown, content: { payload: unknown; topic: unknown; channel: unknown; recipient?: unknown; category?: unknown; attributes?: unknown }): unknown {
  if (typeof msgid !== "string") return msgid;
  const text = (value: unknown): string => (typeof value === "string" ? value : "");
  const digest = sha256Hex(JSON.stringify([
    text(content.channel), text(content.topic), payloadText(content.payload), text(content.recipient), text(content.category), payloadText(content.attributes ?? null),
  ])).slice(0, 16);
  return `${msgid}:${digest}`;
}
