import type { Node, NodeAPI, NodeMessage } from "node-red";
import { fallbackMessageId } from "../../core/fallbackMessageId";
import type { RawSend } from "../../core/send";

/** The §2 fields a gate reads, each a TypedInput pair `<field>` / `<field>Type` (SPEC §11). */
export const SEND_FIELDS = [
  "recipient", "channel", "category", "tier", "messageId", "org", "attributes", "recipientLimits", "timezone", "expiresAt", "body",
] as const;
export type SendField = (typeof SEND_FIELDS)[number];

/** Where a field is read from when the node does not say: msg.<field>, except the body. */
const DEFAULT_PATH: Partial<Record<SendField, string>> = { body: "payload" };

/** The raw send plus what gates beyond the cap gate read (the body, for duplicate content). */
export type RawGateInput = RawSend & { body?: unknown };

export type FieldProps = Partial<Record<SendField | `${SendField}Type`, string>>;

/** A field's value now, or (a context store, JSONata) once it is known. */
type Reader = (msg: NodeMessage) => unknown;

/** A msg path whose parts do not depend on the msg, walked without re-parsing it per msg; undefined when it does. */
function fixedPath(RED: NodeAPI, path: string): string[] | undefined {
  try {
    const parts = RED.util.normalisePropertyExpression(path.startsWith("msg.") ? path.slice(4) : path) as unknown[];
    return parts.every((p) => typeof p === "string" || typeof p === "number") ? parts.map(String) : undefined;
  } catch {
    return undefined;
  }
}

function walk(msg: NodeMessage, parts: readonly string[]): unknown {
  let value: unknown = msg;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** Reads one TypedInput property (msg / flow / global / env / JSONata / str …) of a msg: at once, or once a context store or JSONata answers. */
export function fieldReader(RED: NodeAPI, node: Node, value: string, type: string): Reader {
  if (type === "msg") {
    const parts = fixedPath(RED, value);
    return parts ? (msg) => walk(msg, parts) : (msg): unknown => RED.util.getMessageProperty(msg, value) as unknown;
  }
  if (type === "jsonata") {
    const expression = RED.util.prepareJSONataExpression(value, node);
    return (msg) => new Promise((resolve, reject) => {
      RED.util.evaluateJSONataExpression(expression, msg, (err, result) => (err ? reject(err) : resolve(result)));
    });
  }
  return (msg) => {
    // most types answer at once (str, num, env); a context store may answer later
    let now: { err: Error | null; result: unknown } | undefined;
    let later: ((answer: { err: Error | null; result: unknown }) => void) | undefined;
    RED.util.evaluateNodeProperty(value, type, node, msg, (err, result) => {
      if (later) later({ err, result });
      else now = { err, result };
    });
    const answered = now;
    if (answered) {
      if (answered.err) throw answered.err;
      return answered.result;
    }
    return new Promise((resolve, reject) => {
      later = ({ err, result }) => (err ? reject(err) : resolve(result));
    });
  };
}

/** Reads the raw send from a msg through the node's configured sources (defaults: msg.<field>). */
export class SendReader {
  /** the fields read and each one's reader, by index: a for-of over [field, reader] pairs made an iterator and a pair a field, every msg */
  private readonly fields: SendField[];
  private readonly readers: Reader[];
  /** every field a msg path: each answers at once */
  private readonly atOnce: boolean;
  /** readAtOnce's one raw send, read into again for each msg */
  private readonly scratch = emptyRaw(undefined);

  constructor(RED: NodeAPI, node: Node, props: FieldProps, fields: readonly SendField[] = SEND_FIELDS.filter((f) => f !== "body")) {
    this.fields = fields.slice();
    this.atOnce = fields.every((field) => (props[`${field}Type`] || "msg") === "msg");
    this.readers = fields.map((field) => {
      const type = props[`${field}Type`] || "msg";
      // a msg path left blank means the default path; a blank string or env value stays blank
      const given = props[field];
      const fallback = DEFAULT_PATH[field] ?? field;
      const value = given === undefined || (given === "" && type === "msg") ? fallback : given;
      return fieldReader(RED, node, value, type);
    });
  }

  /**
   * read() when every field is a msg path, into one object this reader reads
   * the next msg into too: for a caller done with it before then (one that
   * parses it at once), with no object made per msg. Undefined when a field
   * is read otherwise, or holds a promise (read() then).
   */
  readAtOnce(msg: NodeMessage): RawGateInput | undefined {
    if (!this.atOnce) return undefined;
    const raw = this.scratch as unknown as Record<string, unknown>;
    raw.fallbackMessageId = msg._msgid;
    for (let i = 0; i < this.readers.length; i++) {
      const field = this.fields[i];
      let value: unknown;
      try {
        value = this.readers[i](msg);
      } catch (err) {
        throw readError(field, err as Error);
      }
      // a msg that holds a promise in a field: read() waits for it
      if (value instanceof Promise) return undefined;
      raw[field] = value;
    }
    return withFallbackId(this.scratch, msg);
  }

  /** The raw send, at once when every source answers at once (msg paths do), else once they all have. */
  read(msg: NodeMessage): RawGateInput | Promise<RawGateInput> {
    const raw = emptyRaw(msg._msgid) as unknown as Record<string, unknown>;
    let pending: Promise<void>[] | undefined;
    for (let i = 0; i < this.readers.length; i++) {
      const field = this.fields[i];
      try {
        const value = this.readers[i](msg);
        if (value instanceof Promise) {
          (pending ??= []).push(value.then((v) => { raw[field] = v; }, (err: Error) => { throw readError(field, err); }));
        } else {
          raw[field] = value;
        }
      } catch (err) {
        throw readError(field, err as Error);
      }
    }
    const send = raw as unknown as RawGateInput;
    return pending ? Promise.all(pending).then(() => withFallbackId(send, msg)) : withFallbackId(send, msg);
  }
}

/** A msg that names no messageId falls back to its _msgid made its own (fallbackMessageId); one that names one needs no digest. */
function withFallbackId(send: RawGateInput, msg: NodeMessage): RawGateInput {
  // absent as parseSend reads it: undefined, null or ""
  if (send.messageId === undefined || send.messageId === null || send.messageId === "") {
    const { payload, topic } = msg as NodeMessage & { topic?: unknown };
    send.fallbackMessageId = fallbackMessageId(send.fallbackMessageId, { payload, topic, channel: send.channel, recipient: send.recipient, category: send.category, attributes: send.attributes });
  }
  return send;
}

/**
 * Every field present from the start (undefined until read): one object shape
 * for every msg. Added one by one, the fields grew the object's store several
 * times a msg (~800 bytes each, a sampling heap profile of a burst showed).
 */
function emptyRaw(fallbackMessageId: string | undefined): RawGateInput {
  return {
    fallbackMessageId, recipient: undefined, channel: undefined, category: undefined, tier: undefined, messageId: undefined, org: undefined,
    attributes: undefined, recipientLimits: undefined, timezone: undefined, expiresAt: undefined, body: undefined,
  };
}

function readError(field: string, err: Error): Error {
  return new Error(`${field}: could not be read (${err.message})`);
}
