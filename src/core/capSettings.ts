import { channelList } from "./channels";
import type { FailMode } from "./store/storeAccess";
import { englishMessages } from "./schema/catalog";
import type { Translate } from "./schema/messages";
import {
  DEFAULT_MAX_QUEUED, isAbsent, historySizeProblem, keyPrefixProblem, leaseSecondsProblem, maxQueuedProblem, oneOfProblem, pgTableProblem, redisNodesProblem, redisUrlProblem, splitList,
  stringListProblem, timeoutProblem,
} from "./settingsChecks";
import { DEFAULT_HISTORY_SIZE, MAX_HISTORY_SIZE } from "./history/decisionHistory";

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
  overloadMode?: unknown;
  leaseSeconds?: unknown;
  historySize?: unknown;
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
  /** what becomes of an overloaded msg: closed, to Catch (to be retried); open, on with reason overloaded, past its caps */
  overloadMode: FailMode;
  /** total caps: a lease on a shared counter lapses after this long without renewal, its unspent slots back in the pool */
  leaseSeconds: number;
  /** the last verdicts kept per recipient (the admin API's history); 0 keeps none */
  historySize: number;
}

/** The problems of a deploy check, each `<property>: <the dialog's own text>`. */
class Problems {
  readonly list: string[] = [];

  constructor(readonly t: Translate) {}

  add(property: string, problem: string | null): void {
    if (problem !== null) this.list.push(`${property}: ${problem}`);
  }
}

function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[], fallback: T, problems: Problems): T {
  const problem = oneOfProblem(value, allowed, problems.t);
  problems.add(field, problem);
  return isAbsent(value) || problem !== null ? fallback : (value as T);
}

/** A list given as an array or as the editor's comma-separated text. */
function stringList(field: string, value: unknown, fallback: string[], problems: Problems): string[] {
  if (value === undefined || value === null) return fallback;
  const problem = stringListProblem(value, problems.t);
  problems.add(field, problem);
  if (problem !== null) return fallback;
  return typeof value === "string" ? splitList(value) : (value as string[]).map((v) => v.trim()).filter((v) => v !== "");
}

function flag(value: unknown): boolean {
  return value === true || value === "true";
}

function parsedRules(value: unknown, problems: Problems): unknown {
  if (value === undefined || value === null || value === "") return [];
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch (err) {
    problems.add("rules", problems.t("sendgate.rules.problem.notJson", { error: (err as Error).message }));
    return [];
  }
}

/**
 * Checks a cap-config's properties; `problems` names every bad property, in
 * the words the dialog uses for it (settingsChecks.ts).
 */
export function readCapSettings(raw: RawCapSettings, t: Translate = englishMessages()): { settings: CapSettings; problems: string[] } {
  const problems = new Problems(t);
  problems.add("keyPrefix", keyPrefixProblem(raw.keyPrefix, t));
  const keyPrefix = typeof raw.keyPrefix === "string" && raw.keyPrefix !== "" ? raw.keyPrefix : "fc";

  problems.add("timeoutMs", timeoutProblem(raw.timeoutMs, t));
  const timeoutMs = isAbsent(raw.timeoutMs) ? 50 : Number(raw.timeoutMs);

  problems.add("maxQueued", maxQueuedProblem(raw.maxQueued, t));
  const maxQueued = isAbsent(raw.maxQueued) ? DEFAULT_MAX_QUEUED : Number(raw.maxQueued);

  problems.add("leaseSeconds", leaseSecondsProblem(raw.leaseSeconds, t));
  const leaseSeconds = isAbsent(raw.leaseSeconds) ? 10 : Number(raw.leaseSeconds);

  problems.add("historySize", historySizeProblem(raw.historySize, t));
  const historySize = isAbsent(raw.historySize) ? DEFAULT_HISTORY_SIZE : Number(raw.historySize);

  const store = oneOf("store", raw.store, ["memory", "redis", "redis-cluster"] as const, "memory", problems);
  if (store === "redis") problems.add("redisUrl", redisUrlProblem(raw.redisUrl, t));
  if (store === "redis-cluster") problems.add("redisNodes", redisNodesProblem(raw.redisNodes, t));
  const redisNodes = stringList("redisNodes", raw.redisNodes, [], problems);

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
    maxQueued: Number.isInteger(maxQueued) && maxQueued >= 1 ? maxQueued : DEFAULT_MAX_QUEUED,
    overloadMode: oneOf("overloadMode", raw.overloadMode, ["closed", "open"] as const, "closed", problems),
    leaseSeconds: Number.isInteger(leaseSeconds) && leaseSeconds >= 1 && leaseSeconds <= 3600 ? leaseSeconds : 10,
    historySize: Number.isInteger(historySize) && historySize >= 0 && historySize <= MAX_HISTORY_SIZE ? historySize : DEFAULT_HISTORY_SIZE,
  };
  if (settings.rulesSource === "postgres") problems.add("pgTable", pgTableProblem(settings.pgTable, t));
  return { settings, problems: problems.list };
}
