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
    const answers: Buffer[] = [];
    // this connection carried the command whose answer is to be dropped
    let cutArmed = false;
    const deliver = (): void => {
      const wait = this.stalledUntil - Date.now();
      if (wait > 0) {
        setTimeout(deliver, wait);
        return;
      }
      for (const chunk of answers.splice(0)) client.write(chunk);
    };
    const requests: Buffer[] = [];
    const forward = (): void => {
      const wait = this.requestsStalledUntil - Date.now();
      if (wait > 0) {
        setTimeout(forward, wait);
        return;
      }
      for (const chunk of requests.splice(0)) upstream.write(chunk);
    };
    client.on("data", (chunk: Buffer) => {
      if (this.marker && chunk.includes(this.marker.text)) {
        this.stalledUntil = Date.now() + this.marker.ms;
        this.marker = undefined;
      }
      if (this.cutMarker !== undefined && chunk.includes(this.cutMarker)) {
        this.cutMarker = undefined;
        cutArmed = true;
      }
      requests.push(chunk);
      if (requests.length === 1) forward();
    });
    upstream.on("data", (chunk: Buffer) => {
      if (cutArmed) {
        // Redis has run the command (this is its answer): the link drops instead of carrying it
        cutArmed = false;
        end();
        return;
      }
      answers.push(chunk);
      if (answers.length === 1) deliver();
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
