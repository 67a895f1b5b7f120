import { existsSync, unlinkSync } from "node:fs";
import type { Cluster, Redis } from "ioredis";
import type { Adoption, AdoptedHeld } from "../core/hold/memoryHeldQueues";
import { readJsonFile } from "../core/store/jsonFile";
import type { MemorySnapshot } from "../core/store/memoryStore";
import type { DeferScope } from "../redis/redisHeldQueue";
import { migrateLegacyCounters } from "./counters";
import { upgradeCounterSnapshot, type MemorySnapshotV1 } from "./legacyCounters";
import { migrateLegacyQueue } from "./queue";

/**
 * The data of version 0.1 brought to this version's layouts, each once: at
 * the store's first connection (Redis counters), when a gate first runs in
 * this process (its Redis queue), or as the memory store's files are read.
 * Nothing here runs on a send's path. Each migration is removed in 0.3.0:
 * an instance that skips 0.2 starts with its 0.1 counters and held msgs left
 * where they are.
 */
export interface RedisMigrations {
  /** once, when the store first connects: 0.1 counters (a sorted set per cap) into their recipient's hash */
  atStart(): void;
  /** once per gate and process: the msgs it held in 0.1's shared queue into its own */
  forGate(scope: DeferScope): Promise<number>;
}

export function redisMigrations(client: Redis | Cluster, keyPrefix: string, warn: (text: string) => void): RedisMigrations {
  let started = false;
  return {
    atStart() {
      if (started) return;
      started = true;
      migrateLegacyCounters(client, keyPrefix).then(
        (moved) => { if (moved > 0) warn(`redis store: moved ${moved} counters of version 0.1 under "${keyPrefix}" to this version's layout`); },
        (err: Error) => warn(`redis store: moving the counters of version 0.1 failed (tried again at the next start): ${err.message}`),
      );
    },
    async forGate(scope) {
      const moved = await migrateLegacyQueue(client, scope);
      if (moved > 0) warn(`moved ${moved} held msg(s) of gate ${scope.gate} from the queue of version 0.1`);
      return moved;
    },
  };
}

/** A memory store file of 0.1 (counters as one list per cap) in this version's form. */
export function upgradeMemorySnapshot(saved: { version: unknown }): MemorySnapshot | undefined {
  return saved.version === 1 ? upgradeCounterSnapshot(saved as MemorySnapshotV1) : undefined;
}

/** The memory queue file of 0.1, written on close only. */
interface QueueFileV1 {
  version: 1;
  entries: AdoptedHeld[];
}

/** The held msgs of 0.1's memory queue file, for the journal to take in at start; the file goes once they are in it. */
export function legacyMemoryQueue(file: string, warn: (text: string) => void): Adoption | undefined {
  if (!existsSync(file)) return undefined;
  let saved: QueueFileV1 | undefined;
  try {
    saved = readJsonFile<QueueFileV1>(file, (s) => (s.version === 1 && Array.isArray(s.entries) ? undefined : "not a defer queue snapshot"));
  } catch (err) {
    warn(`memory defer queue: could not read ${file}: ${(err as Error).message}`);
    return undefined;
  }
  return { held: saved?.entries ?? [], adopted: () => unlinkSync(file) };
}
