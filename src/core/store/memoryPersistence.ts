import { readJsonFile } from "./jsonFile";
import type { MemorySnapshot } from "./memoryStore";
import { upgradeCounterSnapshot, type MemorySnapshotV1 } from "../../migrations/legacyCounters";

/** Reads a saved memory store (a version-1 file is brought to version 2), or undefined when there is none. A damaged file throws, naming it. */
export function loadSnapshot(file: string): MemorySnapshot | undefined {
  const saved = readJsonFile<MemorySnapshot | MemorySnapshotV1>(file, (s) => (s.version === 1 || s.version === 2 ? undefined : `unknown memory store version ${String((s as { version: unknown }).version)}`));
  return saved?.version === 1 ? upgradeCounterSnapshot(saved) : saved;
}
