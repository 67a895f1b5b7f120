import { createServer, connect, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

/**
 * A TCP link to a Redis that can stall commands or their answers, or drop
 * an answer: Redis runs each command as it arrives (late, when the requests
 * are stalled), and what it answers reaches the client late, in order (a
 * congested or stalled network), or never (the connection drops). So a call
 * can fail in the client after Redis has applied it.
 */
export class SlowLink {
  private stalledUntil = 0;
  private requestsStalledUntil = 0;
  private marker: { text: string; ms: number } | undefined;
  private cutMarker: string | undefined;
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server, readonly url: string) {}

  static async open(redisPort = 6379): Promise<SlowLink> {
    // eslint-disable-next-line prefer-const -- assigned below, once the server it is read in exists
    let link: SlowLink | undefined;
    const server = createServer((client) => link?.carry(client, redisPort));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    link = new SlowLink(server, `redis://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return link;
  }

  /** From the first command whose bytes carry `text`, Redis's answers (that command's too) reach the client `ms` later. */
  stallRepliesFrom(text: string, ms: number): void {
    this.marker = { text, ms };
  }

  /** Commands sent from now on reach Redis `ms` later (in order): the store's clock has moved on when it runs them. */
  stallRequests(ms: number): void {
    this.requestsStalledUntil = Date.now() + ms;
  }

  /** The first command whose bytes carry `text` runs in Redis, and the connection drops before its answer reaches the client. */
  cutAnswerFrom(text: string): void {
    this.cutMarker = text;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private carry(client: Socket, redisPort: number): void {
    const upstream = connect(redisPort, "127.0.0.1");
    this.sockets.add(client).add(upstream);
    // this connection carried the command whose answer is to be dropped
    let cutArmed = false;
    const answers = delayedPipe(() => this.stalledUntil, (chunk) => client.write(chunk));
    const requests = delayedPipe(() => this.requestsStalledUntil, (chunk) => upstream.write(chunk));
    client.on("data", (chunk: Buffer) => {
      if (this.marker && chunk.includes(this.marker.text)) {
        this.stalledUntil = Date.now() + this.marker.ms;
        this.marker = undefined;
      }
      if (this.cutMarker !== undefined && chunk.includes(this.cutMarker)) {
        this.cutMarker = undefined;
        cutArmed = true;
      }
      requests(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (cutArmed) {
        // Redis has run the command (this is its answer): the link drops instead of carrying it
        cutArmed = false;
        end();
        return;
      }
      answers(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  }
}

/** Writes each chunk in order, none before `until()` (epoch ms, read when the first waiting chunk would go). */
function delayedPipe(until: () => number, write: (chunk: Buffer) => void): (chunk: Buffer) => void {
  const waiting: Buffer[] = [];
  const flush = (): void => {
    const wait = until() - Date.now();
    if (wait > 0) {
      setTimeout(flush, wait);
      return;
    }
    for (const chunk of waiting.splice(0)) write(chunk);
  };
  return (chunk) => {
    waiting.push(chunk);
    if (waiting.length === 1) flush();
  };
}
