import type Redis from "ioredis";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { parseSend } from "../../src/core/send";
import { createCapService } from "../../src/service/createCapService";

/** A cap as both sides are given it: a count per window. */
export interface Limit {
  id: string;
  max: number;
  windowSeconds: number;
}

/** What one claim attempt came to. */
export interface Attempt {
  allowed: boolean;
  /** points taken in some limiters by an attempt another limiter refused (it did not go out, yet counts) */
  leaked: number;
}

export interface Claimer {
  claim(recipient: string, messageId: string): Promise<Attempt>;
  close(): Promise<void>;
}

/** The core's claim: a CapService on the Redis store, every cap checked and claimed in one atomic step. */
export function coreClaimer(redisUrl: string, keyPrefix: string, limits: readonly Limit[]): Claimer {
  const service = createCapService({
    store: "redis", redisUrl, keyPrefix, timeoutMs: 5000, failMode: "closed",
    rules: limits.map((l) => ({ id: l.id, scope: "global", max_count: l.max, window_seconds: l.windowSeconds })),
  }, {}, { warn: () => undefined, error: () => undefined });
  return {
    async claim(recipient, messageId) {
      const decision = await service.engine.claim(parseSend({ recipient, channel: "sms", messageId }, service.sendRules));
      if (decision.kind === "fail_open") throw decision.error;
      return { allowed: decision.kind === "allowed", leaked: 0 };
    },
    close: () => service.close(),
  };
}

/**
 * rate-limiter-flexible as its users chain it: one RateLimiterRedis per cap,
 * consumed one after another; the first refusal stops the send, but what the
 * earlier limiters took stays taken.
 */
export function chainedClaimer(client: Redis, keyPrefix: string, limits: readonly Limit[]): Claimer {
  const limiters = limits.map((l) => new RateLimiterRedis({ storeClient: client, keyPrefix: `${keyPrefix}:${l.id}`, points: l.max, duration: l.windowSeconds }));
  return {
    async claim(recipient) {
      let taken = 0;
      for (const limiter of limiters) {
        try {
          await limiter.consume(recipient, 1);
          taken++;
        } catch (refusal) {
          if (!(refusal instanceof RateLimiterRes)) throw refusal;
          return { allowed: false, leaked: taken };
        }
      }
      return { allowed: true, leaked: 0 };
    },
    close: async () => undefined,
  };
}
