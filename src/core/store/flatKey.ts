/**
 * `key` in one piece, for a Map that keeps it for days. A key made by
 * joining strings is a tree of its parts in V8, kept whole by the Map, and
 * that tree outweighs the recipient's counters; trim() hands back the flat
 * text, which is the same string when it had nothing to trim (checked, so a
 * key with spaces at an end stays as it was).
 */
export function flatKey(key: string): string {
  const flat = key.trim();
  return flat.length === key.length ? flat : key;
}
