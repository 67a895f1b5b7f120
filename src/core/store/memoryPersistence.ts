import { readJsonFile } from "./jsonFile";
import type { MemorySnapshot } from "./memoryStore";

/**
 * Reads a saved memory store, or undefined when there is none. A file of an
 * older version is brought to this one by `older` (none: refused). A damaged
 * file throws, naming it.
 */
export function loadSnapshot(file: string, older?: (saved: { version: unknown }) => MemorySnapshot | undefined): MemorySnapshot | undefined {
  const saved = readJsonFile<MemorySnapshot | { version: unknown }>(file, (s) => (s.version === 2 || (older && s.version !== 2) ? undefined : `unknown memory store version ${String(s.version)}`));
  if (saved === undefined || saved.version === 2) return saved as MemorySnapshot | undefined;
  const upgraded = older?.(saved);
  if (!upgraded) throw new Error(`unknown memory store version ${String(saved.version)}`);
  return upgraded;
}
