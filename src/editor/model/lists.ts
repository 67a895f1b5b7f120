/** Comma-separated text as a list: trimmed, empties dropped. */
export function splitList(text: unknown): string[] {
  if (typeof text !== "string") return [];
  return text.split(",").map((s) => s.trim()).filter((s) => s !== "");
}

/** A stored list (array or the text a hand-written flow may hold) as input text. */
export function listText(value: unknown, fallback: readonly string[] = []): string {
  if (Array.isArray(value)) return value.join(", ");
  if (typeof value === "string") return value;
  return fallback.join(", ");
}

/** Left out of a hand-written flow, or left empty: the runtime applies the SPEC §11 default. */
export function isAbsent(value: unknown): boolean {
  return value === undefined || value === null || value === "";
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function has(object: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(object, key);
}
