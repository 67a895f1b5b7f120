import Redis from "ioredis";
import { randomBytes } from "node:crypto";

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** A key prefix no other test uses, so tests never see each other's counters. */
export function uniquePrefix(label = "t"): string {
  return `sgtest-${label}-${randomBytes(4).toString("hex")}`;
}

export function redisClient(): Redis {
  return new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
}

/** Deletes every key under a test prefix. */
export async function dropPrefix(client: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await client.del(...keys);
  } while (cursor !== "0");
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
