import type { NodeMessage } from "node-red";
import { seededRandom } from "./random";

/** A send as the gate reads it by default (msg.recipient, msg.channel, msg.messageId; SPEC §2). */
export interface BenchMsg extends NodeMessage {
  _msgid: string;
  recipient: string;
  channel: string;
  messageId: string;
}

/** Phone-like recipients, so keys carry the percent-encoded "+" a real address has. */
export function recipientName(index: number): string {
  return `+1555${String(index).padStart(7, "0")}`;
}

/** Makes msgs for one scenario: unique ids, recipients drawn uniformly from `recipients`. */
export class MsgSource {
  private readonly random: () => number;
  private issued = 0;

  constructor(private readonly tag: string, private readonly recipients: number, private readonly channel: string, seed: number) {
    this.random = seededRandom(seed);
  }

  next(): BenchMsg {
    const id = `${this.tag}-${this.issued++}`;
    return {
      _msgid: id,
      messageId: id,
      recipient: recipientName(Math.floor(this.random() * this.recipients)),
      channel: this.channel,
      payload: "bench",
    };
  }
}
