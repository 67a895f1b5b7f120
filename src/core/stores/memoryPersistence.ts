import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from "node:fs";
import { dirname } from "node:path";
import type { MemorySnapshot } from "./memoryStore";

/** Reads a saved memory store, or undefined when there is none. A damaged file throws, naming it. */
export function loadSnapshot(file: string): MemorySnapshot | undefined {
  if (!existsSync(file)) return undefined;
  const parsed = JSON.parse(readFileSync(file, "utf8")) as MemorySnapshot;
  if (parsed.version !== 1) throw new Error(`${file}: unknown memory store version ${String(parsed.version)}`);
  return parsed;
}

/** Writes through a temporary file and a rename, so a crash mid-write never leaves half a file. */
export function saveSnapshot(file: string, snapshot: MemorySnapshot): void {
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.tmp`;
  writeFileSync(temporary, JSON.stringify(snapshot));
  renameSync(temporary, file);
}
