import type { Translate } from "./schema/messages";

/**
 * A cap-config's checks of its settings, worded from the message catalog:
 * the dialog (src/editor) and the runtime's deploy check (capSettings.ts) run
 * the same ones, so they say the same thing. Each returns the text, or null.
 * Pure: the editor bundles it.
 */
const PG_IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/**
 * The send queue's default bound, msgs. A msg waiting in a gate costs it
 * about 300 bytes beyond the msg itself (what Node-RED's input event keeps
 * for it, and its slots in the gate's line); with a typical outbound msg of
 * about 1 KB, 1.5 million waiting msgs take about 2 GB, half of Node's
 * default heap: a campaign of a million msgs in one tick is judged whole, and
 * past the bound msgs go to Catch rather than grow the heap until the process
 * dies with every msg it held.
 */
export const DEFAULT_MAX_QUEUED = 1_500_000;

const PG_MAX_IDENTIFIER = 63;
const K = "cap-config.errors";

/** Left out of a hand-written flow, or left empty: the runtime applies the SPEC §11 default. */
export function isAbsent(value: unknown): boolean {
  return value === undefined || value === null || value === "";
}

/** Comma-separated text as a list: trimmed, empties dropped. */
export function splitList(text: unknown): string[] {
  if (typeof text !== "string") return [];
  return text.split(",").map((s) => s.trim()).filter((s) => s !== "");
}

export function oneOfProblem(value: unknown, allowed: readonly string[], t: Translate): string | null {
  if (isAbsent(value) || (typeof value === "string" && allowed.includes(value))) return null;
  return t(`${K}.oneOf`, { allowed: allowed.join(", "), value: JSON.stringify(value) });
}

export function redisUrlProblem(value: unknown, t: Translate): string | null {
  if (typeof value !== "string" || value === "" || /^rediss?:\/\//.test(value)) return null;
  return t(`${K}.redisUrl`);
}

export function redisNodesProblem(value: unknown, t: Translate): string | null {
  const nodes = Array.isArray(value) ? value.map(String) : splitList(value);
  if (nodes.length === 0) return t(`${K}.redisNodesMissing`);
  const bad = nodes.filter((n) => !/^[^\s:]+:\d{1,5}$/.test(n.trim()));
  return bad.length === 0 ? null : t(`${K}.redisNodesBad`, { nodes: bad.join(", ") });
}

/** Anything but non-empty text means the default prefix, fc. */
export function keyPrefixProblem(value: unknown, t: Translate): string | null {
  return typeof value === "string" && /[{}]/.test(value) ? t(`${K}.keyPrefix`) : null;
}

/** `table` or `schema.table`, each part a lowercase SQL identifier (src/core/pgRules/tableName.ts); "" means the default. */
export function pgTableProblem(value: unknown, t: Translate): string | null {
  if (typeof value !== "string" || value === "") return null;
  const parts = value.split(".");
  if (parts.length > 2) return t(`${K}.pgTableForm`, { text: value });
  for (const part of parts) {
    if (!PG_IDENTIFIER.test(part)) return t(`${K}.pgTableIdentifier`, { part });
    if (part.length > PG_MAX_IDENTIFIER) return t(`${K}.pgTableLength`, { part, max: PG_MAX_IDENTIFIER });
  }
  return null;
}

/** Inline rules held while the source is PostgreSQL are ignored, but text that is not JSON at all is still refused. */
export function parkedRulesProblem(value: unknown, t: Translate): string | null {
  if (typeof value !== "string" || value === "") return null;
  try {
    JSON.parse(value);
    return null;
  } catch (err) {
    return t(`${K}.rulesJson`, { error: (err as Error).message });
  }
}

export function timeoutProblem(value: unknown, t: Translate): string | null {
  if (isAbsent(value)) return null;
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? null : t(`${K}.timeout`);
}

/** Entries of decision history kept per recipient: 0 (off) to 100 (src/core/history/decisionHistory.ts MAX_HISTORY_SIZE). */
export function historySizeProblem(value: unknown, t: Translate): string | null {
  if (isAbsent(value)) return null;
  const n = Number(value);
  return Number.isInteger(n) && n >= 0 && n <= 100 ? null : t(`${K}.historySize`);
}

export function leaseSecondsProblem(value: unknown, t: Translate): string | null {
  if (isAbsent(value)) return null;
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 && n <= 3600 ? null : t(`${K}.leaseSeconds`);
}

export function maxQueuedProblem(value: unknown, t: Translate): string | null {
  if (isAbsent(value)) return null;
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 ? null : t(`${K}.maxQueued`);
}

/** A list property as the runtime reads it: absent, comma-separated text or an array of strings. */
export function stringListProblem(value: unknown, t: Translate): string | null {
  if (value === undefined || value === null || typeof value === "string") return null;
  return Array.isArray(value) && value.every((s) => typeof s === "string") ? null : t(`${K}.list`);
}

/** Where a throughput-gate reads its ceiling's key: the send's org, org + channel, or a TypedInput source. */
export const THROUGHPUT_KEY_TYPES: readonly string[] = ["org", "channel", "msg", "flow", "global", "env", "jsonata", "str"];

/**
 * What is wrong with a throughput-gate's key, if anything: "keyType" (no such
 * source) or "key" (a source that needs a property, expression or text got
 * none). The dialog and the deploy check ask the same question.
 */
export function throughputKeyProblem(keyType: unknown, key: unknown): "keyType" | "key" | null {
  const type = isAbsent(keyType) ? "org" : keyType;
  if (typeof type !== "string" || !THROUGHPUT_KEY_TYPES.includes(type)) return "keyType";
  if (type === "org" || type === "channel") return null;
  return typeof key === "string" && key.trim() !== "" ? null : "key";
}
