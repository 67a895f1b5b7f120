import type Redis from "ioredis";
import { waitedMs } from "../core/sendQueue/waitClock";

/**
 * ioredis states of a connection being opened: a cluster opens a master's
 * connection at the first call to it, which waits for it as a burst at deploy
 * waits for the store's first connection (whenUsable): that wait is not the
 * call's silence
 */
const OPENING: ReadonlySet<string> = new Set(["wait", "connecting", "connect"]);

/** One connection of a store, and when it last delivered anything, on the wait clock (waitedMs). */
interface Connection {
  redis: Redis;
  heard: number;
}

/**
 * When this process last read anything from each connection of a store (a
 * cluster's masters by `host:port`), on the wait clock. Redis answers a
 * connection's commands in the order they were sent: one that keeps
 * answering is alive and working through the calls ahead of a later one, so
 * that call's timeout counts only the time its connection said nothing
 * (roundTrip), not its wait behind them.
 */
export class HeardFrom {
  private latest = -Infinity;
  private readonly byNode = new Map<string, Connection>();

  /** Follows one connection, each time it (re)connects; `node` names a cluster's master (a new connection to it replaces the old). */
  watch(redis: Redis, node = ""): void {
    const connection: Connection = { redis, heard: -Infinity };
    this.byNode.set(node, connection);
    redis.on("connect", () => {
      // ioredis reads replies from this stream, and a new one comes with each connection
      redis.stream.on("data", () => {
        const now = waitedMs();
        connection.heard = now;
        this.latest = now;
      });
    });
  }

  /** When the connection to `node` last delivered anything (now while it is being opened); -Infinity when it never has or is not known. */
  of(node: string): number {
    const connection = this.byNode.get(node);
    return connection === undefined ? -Infinity : this.heardOf(connection);
  }

  /**
   * When the store last delivered anything, for a call that may wait on any
   * of its connections: the earliest of those that owe an answer (on a
   * cluster whose one master hung while the others answer, a call waiting on
   * it is not kept alive by theirs); the latest of all when none owes one.
   */
  store(): number {
    let owing = Infinity;
    for (const connection of this.byNode.values()) {
      if (connection.redis.commandQueue.length > 0) owing = Math.min(owing, this.heardOf(connection));
    }
    return owing === Infinity ? this.latest : owing;
  }

  private heardOf(connection: Connection): number {
    return OPENING.has(connection.redis.status) ? waitedMs() : connection.heard;
  }
}
