import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Reads a JSON file, or undefined when there is none; `check` names what is wrong with a damaged one. */
export function readJsonFile<T>(file: string, check: (value: T) => string | undefined): T | undefined {
  if (!existsSync(file)) return undefined;
  const parsed = JSON.parse(readFileSync(file, "utf8")) as T;
  const problem = check(parsed);
  if (problem) throw new Error(`${file}: ${problem}`);
  return parsed;
}

/** Writes through a temporary file and a rename, so a crash mid-write never leaves half a file. */
export function writeJsonFile(file: string, value: unknown): void {
  writeTextFile(file, JSON.stringify(value));
}

export function writeTextFile(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}
