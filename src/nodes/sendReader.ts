import type { Node, NodeAPI, NodeMessage } from "node-red";
import type { RawSend } from "../core/send";

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

type Reader = (msg: NodeMessage) => Promise<unknown> | unknown;

function fieldReader(RED: NodeAPI, node: Node, value: string, type: string): Reader {
  if (type === "msg") return (msg) => RED.util.getMessageProperty(msg, value);
  if (type === "jsonata") {
    const expression = RED.util.prepareJSONataExpression(value, node);
    return (msg) => new Promise((resolve, reject) => {
      RED.util.evaluateJSONataExpression(expression, msg, (err, result) => (err ? reject(err) : resolve(result)));
    });
  }
  return (msg) => new Promise((resolve, reject) => {
    RED.util.evaluateNodeProperty(value, type, node, msg, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

/** Reads the raw send from a msg through the node's configured sources (defaults: msg.<field>). */
export class SendReader {
  private readonly readers: [SendField, Reader][];

  constructor(RED: NodeAPI, node: Node, props: FieldProps, fields: readonly SendField[] = SEND_FIELDS.filter((f) => f !== "body")) {
    this.readers = fields.map((field) => {
      const type = props[`${field}Type`] || "msg";
      // a msg path left blank means the default path; a blank string or env value stays blank
      const given = props[field];
      const fallback = DEFAULT_PATH[field] ?? field;
      const value = given === undefined || (given === "" && type === "msg") ? fallback : given;
      return [field, fieldReader(RED, node, value, type)];
    });
  }

  async read(msg: NodeMessage): Promise<RawGateInput> {
    const raw: Record<string, unknown> = {};
    for (const [field, reader] of this.readers) {
      try {
        // msg paths answer at once; only JSONata and friends need a tick
        const value = reader(msg);
        raw[field] = value instanceof Promise ? await value : value;
      } catch (err) {
        throw new Error(`${field}: could not be read (${(err as Error).message})`);
      }
    }
    raw.fallbackMessageId = msg._msgid;
    return raw as unknown as RawGateInput;
  }
}
