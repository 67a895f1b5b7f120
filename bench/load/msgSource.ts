import type { NodeMessage } from "node-red";
import { seededRandom } from "./random";

/** A send as the gate reads it by default (msg.recipient, msg.channel, msg.messageId; SPEC §2). */
export interface BenchMsg extends NodeMessage {
  _msgid: string;
  recipient: string;
  channel: string;
  messageId: string;
}

export interface MsgSourceOptions {
  /** makes msg ids unique */
  tag: string;
  /** how many distinct recipients, drawn uniformly */
  recipients: number;
  /** first digits of every recipient: two sources with different ones never share a counter */
  recipientPrefix: string;
  channel: string;
  seed: number;
}

/** Makes msgs for one run: unique ids, phone-like recipients (keys carry the encoded "+" a real address has). */
export class MsgSource {
  private readonly random: () => number;
  private issued = 0;

  constructor(private readonly options: MsgSourceOptions) {
    this.random = seededRandom(options.seed);
  }

  next(): BenchMsg {
    const { tag, recipients, recipientPrefix, channel } = this.options;
    const id = `${tag}-${this.issued++}`;
    return {
      _msgid: id,
      messageId: id,
      recipient: `${recipientPrefix}${String(Math.floor(this.random() * recipients)).padStart(7, "0")}`,
      channel,
      payload: "bench",
    };
  }
}
