import { memberDigest, RECORD_TOKEN } from "../core/store/counterEntry";
import type { Entry, MemorySnapshot } from "../core/store/memoryStore";

/**
 * Version 0.1 kept one sorted set per (recipient, cap): key
 * `<base>:c:<cap>[:<per values>][#<period>]`, member the messageId, score the
 * time. Since 0.2 every cap of a recipient is a field of one hash `<base>:c`.
 * This maps an old key to its new home; undefined when it is not a counter key.
 */
export function legacyCounterHome(key: string): { key: string; field: string } | undefined {
  const tagEnd = key.indexOf("}:c:");
  if (key.indexOf("{") < 0 || tagEnd < 0) return undefined;
  const rest = key.slice(tagEnd + 4);
  const period = rest.indexOf("#");
  const field = period < 0 ? rest : rest.slice(0, period);
  if (field === "") return undefined;
  return { key: key.slice(0, tagEnd + 3), field };
}

/**
 * An old counter's entries in the new form. Their claim tokens were never
 * recorded, so no give-back can remove them: at worst a msg claimed before the
 * upgrade and refused after it keeps its slot until the window ends.
 */
export function legacyEntries(members: readonly { member: string; score: number }[]): Entry[] {
  return members
    .map(({ member, score }): Entry => [Math.floor(score), memberDigest(member), RECORD_TOKEN])
    .sort((a, b) => a[0] - b[0]);
}

/** A memory store saved by 0.1. */
export interface MemorySnapshotV1 {
  version: 1;
  counters: [string, { entries: { score: number; member: string }[]; expiresAt: number }][];
  hashes: [string, [string, string][]][];
  marks: [string, { member: string; expiresAt: number }][];
}

export function upgradeCounterSnapshot(old: MemorySnapshotV1): MemorySnapshot {
  const counters = new Map<string, { expiresAt: number; fields: Map<string, Entry[]> }>();
  for (const [oldKey, counter] of old.counters) {
    const home = legacyCounterHome(oldKey);
    if (!home) continue;
    let hash = counters.get(home.key);
    if (!hash) counters.set(home.key, (hash = { expiresAt: 0, fields: new Map() }));
    hash.fields.set(home.field, [...(hash.fields.get(home.field) ?? []), ...legacyEntries(counter.entries)].sort((a, b) => a[0] - b[0]));
    hash.expiresAt = Math.max(hash.expiresAt, counter.expiresAt);
  }
  return {
    version: 2,
    counters: [...counters].map(([key, hash]) => [key, { expiresAt: hash.expiresAt, fields: [...hash.fields] }]),
    hashes: old.hashes,
    marks: old.marks,
  };
}
