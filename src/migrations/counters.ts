import type { Cluster, Redis } from "ioredis";
import { memberDigest } from "../core/store/counterEntry";
import { withScripts } from "../redis/scripts";
import { legacyCounterHome } from "./legacyCounters";

type RedisClient = Redis | Cluster;

/** Set once no counter of 0.1 is left under a prefix: later starts skip the scan. */
export function layoutKey(prefix: string): string {
  return `${prefix}:layout`;
}

async function* scanNode(node: Redis, match: string): AsyncGenerator<string[]> {
  let cursor = "0";
  do {
    const [next, keys] = await node.scan(cursor, "MATCH", match, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) yield keys;
  } while (cursor !== "0");
}

/**
 * Moves the counters a 0.1 cap-config left under `prefix` (one sorted set per
 * recipient and cap) into the 0.2 layout (one hash per recipient), once: every
 * master is scanned, each old key moved atomically by lua/migrate_counter.lua,
 * and `<prefix>:layout` set when none is left. Until a recipient's old
 * counters are moved, its sends count only what was claimed since the
 * upgrade. Returns how many old keys were moved.
 */
export async function migrateLegacyCounters(client: RedisClient, prefix: string): Promise<number> {
  if ((await client.get(layoutKey(prefix))) === "2") return 0;
  const nodes: Redis[] = "nodes" in client && typeof client.nodes === "function" && client.constructor.name === "Cluster"
    ? (client).nodes("master")
    : [client as Redis];
  let moved = 0;
  for (const node of nodes) {
    for await (const keys of scanNode(node, `${prefix}:{*}:c:*`)) {
      for (const key of keys) {
        const home = legacyCounterHome(key);
        if (!home || (await client.type(key)) !== "zset") continue;
        const members = await client.zrange(key, 0, -1);
        await withScripts(client).sendgateMigrateCounter(2, key, home.key, home.field, ...members.map((m) => memberDigest(m) * 65536));
        moved++;
      }
    }
  }
  await client.set(layoutKey(prefix), "2");
  return moved;
}
