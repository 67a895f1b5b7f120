import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { DeferSnapshot } from "./memoryDeferQueue";

/** Reads a saved memory defer queue, or undefined when there is none. A damaged file throws, naming it. */
export function loadDeferSnapshot(file: string): DeferSnapshot | undefined {
  if (!existsSync(file)) return undefined;
  const parsed = JSON.parse(readFileSync(file, "utf8")) as DeferSnapshot;
  if (parsed.version !== 1 || !Array.isArray(parsed.entries)) throw new Error(`${file}: not a defer queue snapshot (version ${String(parsed.version)})`);
  return parsed;
}

/** Writes through a temporary file and a rename, so a crash mid-write never leaves half a file. */
export function saveDeferSnapshot(file: string, snapshot: DeferSnapshot): void {
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.tmp`;
  writeFileSync(temporary, JSON.stringify(snapshot));
  renameSync(temporary, file);
}
