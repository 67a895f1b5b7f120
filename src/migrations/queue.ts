import type Redis from "ioredis";
import type { Cluster } from "ioredis";
import { checkDeferPrefix, deferHashTag, deferKeys, type DeferScope } from "../redis/redisHeldQueue";
import { withScripts } from "../redis/scripts";

type RedisClient = Redis | Cluster;

/** The keys of the queue layout before 0.2: one queue per key prefix, every cap-config and gate in it. */
export function legacyDeferKeys(keyPrefix: string): string[] {
  checkDeferPrefix(keyPrefix);
  const base = `${keyPrefix}:${deferHashTag(keyPrefix)}`;
  return ["due", "lease", "msg", "merged", "at", "ck", "collapse"].map((part) => `${base}:${part}`);
}

/**
 * Moves the msgs a gate held in the layout before 0.2 into the gate's own
 * queue (lua/defer_migrate.lua, atomic per msg). Only due msgs move; a msg an
 * instance of the old version is releasing moves once its lease ends, so call
 * this again now and then while old msgs remain. Msgs of a gate that runs on
 * no instance stay under the old keys. Returns how many moved.
 */
export async function migrateLegacyQueue(client: RedisClient, scope: DeferScope): Promise<number> {
  const legacy = legacyDeferKeys(scope.keyPrefix);
  const msgKey = legacy[2];
  if ((await client.exists(msgKey)) === 0) return 0;
  const scripts = withScripts(client);
  const keys = deferKeys(scope);
  const target = [keys.due, keys.lease, keys.msg, keys.at, keys.ck, keys.collapse, keys.exp, keys.dropped];
  let moved = 0;
  let cursor = "0";
  do {
    const [next, flat] = await client.hscan(msgKey, cursor, "COUNT", 500);
    cursor = next;
    const ids: string[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      try {
        if ((JSON.parse(flat[i + 1]) as { gate?: unknown }).gate === scope.gate) ids.push(flat[i]);
      } catch {
        // not readable: it stays where it is
      }
    }
    if (ids.length > 0) {
      moved += Number(await scripts.sendgateDeferMigrate(legacy.length + target.length, ...legacy, ...target, keys.base, ...ids));
    }
  } while (cursor !== "0");
  return moved;
}
