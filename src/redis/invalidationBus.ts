import { randomUUID } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import { quitRedis } from "./connection";
import { parseBusMessage, type BusEvent, type InvalidationBus, type RuleChange } from "../core/rules/invalidationBus";

type RedisClient = Redis | Cluster;

export interface RedisInvalidationBusOptions {
  /** makes one connection; called twice (a subscriber connection cannot publish) */
  connect: () => RedisClient;
  /** the cap-config's key prefix; the pub/sub channel is `<prefix>:rules-changed` */
  keyPrefix: string;
  onError?: (err: Error) => void;
}

export function rulesChangedChannel(keyPrefix: string): string {
  return `${keyPrefix}:rules-changed`;
}


/**
 * Rule changes over Redis pub/sub. After the subscriber reconnects it emits
 * `resync`, since messages published while it was away are lost.
 */
export class RedisInvalidationBus implements InvalidationBus {
  readonly origin = randomUUID();
  readonly channel: string;
  /** resolves once the subscription is active (messages published before it are not heard) */
  readonly subscribed: Promise<void>;
  private readonly publisher: RedisClient;
  private readonly subscriber: RedisClient;
  private readonly listeners = new Set<(event: BusEvent) => void>();
  private everSubscribed = false;
  private lostSinceSubscribed = false;

  constructor(options: RedisInvalidationBusOptions) {
    this.channel = rulesChangedChannel(options.keyPrefix);
    this.publisher = options.connect();
    this.subscriber = options.connect();
    const onError = (err: Error): void => options.onError?.(err);
    this.publisher.on("error", onError);
    this.subscriber.on("error", onError);
    this.subscriber.on("message", (channel: string, text: string) => this.heard(channel, text));
    this.subscriber.on("close", () => {
      if (this.everSubscribed) this.lostSinceSubscribed = true;
    });
    // ioredis re-subscribes by itself on reconnect; say so to the listeners then
    this.subscriber.on("ready", () => {
      if (!this.lostSinceSubscribed) return;
      this.lostSinceSubscribed = false;
      this.emit({ kind: "resync" });
    });
    this.subscribed = this.subscriber.subscribe(this.channel).then(() => {
      this.everSubscribed = true;
    });
    this.subscribed.catch((err: unknown) => onError(err instanceof Error ? err : new Error(String(err))));
  }

  async publish(change: RuleChange): Promise<void> {
    await this.publisher.publish(this.channel, JSON.stringify({ org: change.org, channel: change.channel, origin: this.origin }));
  }

  subscribe(listener: (event: BusEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    await Promise.all([quitRedis(this.subscriber), quitRedis(this.publisher)]);
  }

  private heard(channel: string, text: string): void {
    if (channel !== this.channel) return;
    const message = parseBusMessage(text);
    if (!message || message.origin === this.origin) return;
    this.emit({ kind: "changed", org: message.org, channel: message.channel });
  }

  private emit(event: BusEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}
