import { readJsonFile } from "./jsonFile";
import type { MemorySnapshot } from "./memoryStore";

/** Reads a saved memory store, or undefined when there is none. A damaged file throws, naming it. */
export function loadSnapshot(file: string): MemorySnapshot | undefined {
  return readJsonFile<MemorySnapshot>(file, (s) => (s.version === 1 ? undefined : `unknown memory store version ${String(s.version)}`));
}
