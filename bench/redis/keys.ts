import { randomBytes } from "node:crypto";
import type Redis from "ioredis";

/** A prefix no one else uses: every key this run writes starts with it. */
export function runPrefix(): string {
  return `sgbench-${randomBytes(4).toString("hex")}`;
}

async function scanEach(client: Redis, pattern: string, each: (keys: string[]) => Promise<void>): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await client.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await each(keys);
  } while (cursor !== "0");
}

export async function countKeys(client: Redis, prefix: string): Promise<number> {
  let n = 0;
  await scanEach(client, `${prefix}*`, async (keys) => {
    n += keys.length;
  });
  return n;
}

/** Deletes every key under `prefix`; returns how many. */
export async function dropKeys(client: Redis, prefix: string): Promise<number> {
  let n = 0;
  await scanEach(client, `${prefix}*`, async (keys) => {
    n += await client.unlink(...keys);
  });
  return n;
}
