import { channelList } from "./channels";
import type { FailMode } from "./capEngine";
import { keyPrefixProblem } from "./keys";
import { rulesTableProblem } from "./pgRules/tableName";

export type StoreKind = "memory" | "redis" | "redis-cluster";
export type RulesSource = "inline" | "postgres";

/** A cap-config's properties (SPEC §11) as the flow JSON gives them, before checking. */
export interface RawCapSettings {
  store?: unknown;
  redisUrl?: unknown;
  redisNodes?: unknown;
  keyPrefix?: unknown;
  rulesSource?: unknown;
  rules?: unknown;
  pgUrl?: unknown;
  pgTable?: unknown;
  defaultOrg?: unknown;
  failMode?: unknown;
  timeoutMs?: unknown;
  exemptTiers?: unknown;
  requireTier?: unknown;
  hashRecipients?: unknown;
  channels?: unknown;
  maxQueued?: unknown;
}

export interface CapSettings {
  store: StoreKind;
  redisUrl: string;
  redisNodes: string[];
  keyPrefix: string;
  rulesSource: RulesSource;
  /** unvalidated: validateRules checks them with the channel list */
  rules: unknown;
  pgUrl: string;
  pgTable: string;
  defaultOrg: string;
  failMode: FailMode;
  timeoutMs: number;
  exemptTiers: string[];
  requireTier: boolean;
  hashRecipients: boolean;
  channels: string[];
  /** most msgs waiting in the send queue before new ones are "overloaded" (SPEC §9) */
  maxQueued: number;
}

function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[], fallback: T, problems: string[]): T {
  if (value === undefined || value === null || value === "") return fallback;
  if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
  problems.push(`${field}: must be one of ${allowed.join(", ")}, got ${JSON.stringify(value)}`);
  return fallback;
}

/** A list given as an array or as the editor's comma-separated text. */
function stringList(field: string, value: unknown, fallback: string[], problems: string[]): string[] {
  if (value === undefined || value === null) return fallback;
  if (typeof value === "string") return value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.map((v) => v.trim()).filter((v) => v !== "");
  problems.push(`${field}: must be a list of strings`);
  return fallback;
}

function flag(value: unknown): boolean {
  return value === true || value === "true";
}

function parsedRules(value: unknown, problems: string[]): unknown {
  if (value === undefined || value === null || value === "") return [];
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch (err) {
    problems.push(`rules: not valid JSON (${(err as Error).message})`);
    return [];
  }
}

/** Checks a cap-config's properties; `problems` names every bad property. */
export function readCapSettings(raw: RawCapSettings): { settings: CapSettings; problems: string[] } {
  const problems: string[] = [];
  const keyPrefix = typeof raw.keyPrefix === "string" && raw.keyPrefix !== "" ? raw.keyPrefix : "fc";
  const prefixProblem = keyPrefixProblem(keyPrefix);
  if (prefixProblem) problems.push(prefixProblem);

  const timeoutMs = raw.timeoutMs === undefined || raw.timeoutMs === "" ? 50 : Number(raw.timeoutMs);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) problems.push(`timeoutMs: must be a positive number of ms, got ${JSON.stringify(raw.timeoutMs)}`);

  const maxQueued = raw.maxQueued === undefined || raw.maxQueued === "" ? 100_000 : Number(raw.maxQueued);
  if (!Number.isInteger(maxQueued) || maxQueued < 1) problems.push(`maxQueued: must be a whole number of msgs >= 1, got ${JSON.stringify(raw.maxQueued)}`);

  const store = oneOf("store", raw.store, ["memory", "redis", "redis-cluster"] as const, "memory", problems);
  const redisNodes = stringList("redisNodes", raw.redisNodes, [], problems);
  if (store === "redis-cluster" && redisNodes.length === 0) problems.push("redisNodes: a redis-cluster store needs at least one host:port");

  const defaultOrg = typeof raw.defaultOrg === "string" && raw.defaultOrg !== "" ? raw.defaultOrg : "default";

  const settings: CapSettings = {
    store,
    redisUrl: typeof raw.redisUrl === "string" && raw.redisUrl !== "" ? raw.redisUrl : "redis://127.0.0.1:6379",
    redisNodes,
    keyPrefix,
    rulesSource: oneOf("rulesSource", raw.rulesSource, ["inline", "postgres"] as const, "inline", problems),
    rules: parsedRules(raw.rules, problems),
    pgUrl: typeof raw.pgUrl === "string" && raw.pgUrl !== "" ? raw.pgUrl : "postgres://127.0.0.1:5432/postgres",
    pgTable: typeof raw.pgTable === "string" && raw.pgTable !== "" ? raw.pgTable : "frequency_caps",
    defaultOrg,
    failMode: oneOf("failMode", raw.failMode, ["open", "closed"] as const, "open", problems),
    timeoutMs: Number.isFinite(timeoutMs) && timeoutMs > 0 ? timeoutMs : 50,
    exemptTiers: stringList("exemptTiers", raw.exemptTiers, ["P0"], problems),
    requireTier: flag(raw.requireTier),
    hashRecipients: flag(raw.hashRecipients),
    channels: channelList(stringList("channels", raw.channels, [], problems)),
    maxQueued: Number.isInteger(maxQueued) && maxQueued >= 1 ? maxQueued : 100_000,
  };
  if (settings.rulesSource === "postgres") {
    const tableProblem = rulesTableProblem(settings.pgTable);
    if (tableProblem) problems.push(tableProblem);
  }
  return { settings, problems };
}
