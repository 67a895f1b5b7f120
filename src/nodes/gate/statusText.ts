/** Node-RED draws a status under the node, unclipped: past this many characters it runs under the next node. */
export const STATUS_MAX_CHARS = 30;
const SEPARATOR = " · ";

/** 1,204 · 12,034 · 123k · 1.2M: exact while it stays short, then rounded down. */
export function formatCount(n: number): string {
  if (n < 100_000) return n.toLocaleString("en-US");
  if (n < 1_000_000) return `${Math.floor(n / 1000)}k`;
  if (n < 10_000_000) return `${Math.floor(n / 100_000) / 10}M`;
  return `${Math.floor(n / 1_000_000)}M`;
}

/**
 * Joins the parts, most important first, keeping only those that fit in
 * `max` characters; the first part always shows (cut with … if it must be).
 */
export function statusLine(parts: readonly string[], max = STATUS_MAX_CHARS): string {
  const [first, ...rest] = parts.filter((p) => p !== "");
  if (first === undefined) return "";
  let text = first.length > max ? `${first.slice(0, max - 1)}…` : first;
  for (const part of rest) {
    if (text.length + SEPARATOR.length + part.length > max) break;
    text += SEPARATOR + part;
  }
  return text;
}
