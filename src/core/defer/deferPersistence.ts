import { readJsonFile, writeJsonFile } from "../stores/jsonFile";
import type { DeferSnapshot } from "./memoryDeferQueue";

/** Reads a saved memory defer queue, or undefined when there is none. A damaged file throws, naming it. */
export function loadDeferSnapshot(file: string): DeferSnapshot | undefined {
  return readJsonFile<DeferSnapshot>(file, (s) => (s.version === 1 && Array.isArray(s.entries) ? undefined : `not a defer queue snapshot (version ${String(s.version)})`));
}

export function saveDeferSnapshot(file: string, snapshot: DeferSnapshot): void {
  writeJsonFile(file, snapshot);
}
