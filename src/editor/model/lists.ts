export { isAbsent, splitList } from "../../core/settingsChecks";

/** A stored list (array or the text a hand-written flow may hold) as input text. */
export function listText(value: unknown, fallback: readonly string[] = []): string {
  if (Array.isArray(value)) return value.join(", ");
  if (typeof value === "string") return value;
  return fallback.join(", ");
}


export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function has(object: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(object, key);
}
