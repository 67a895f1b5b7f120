import { sha256Hex } from "../sha256";

/**
 * JSON with object keys sorted at every depth, so two bodies that differ only
 * in key order are the same body. Buffers count by their bytes; values JSON
 * cannot hold (undefined, functions) are dropped as JSON.stringify drops them.
 */
export function canonicalJson(value: unknown): string {
  if (Buffer.isBuffer(value)) return JSON.stringify({ $buffer: value.toString("base64") });
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined || typeof v === "function" ? "null" : canonicalJson(v))).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const fields = Object.keys(value)
      .filter((k) => {
        const v = (value as Record<string, unknown>)[k];
        return v !== undefined && typeof v !== "function";
      })
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${fields.join(",")}}`;
  }
  if (typeof value === "bigint") return JSON.stringify(value.toString());
  return JSON.stringify(value) ?? "null";
}

/** sha256 of the canonical body: what a duplicate-content mark is keyed by. */
export function bodyHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
