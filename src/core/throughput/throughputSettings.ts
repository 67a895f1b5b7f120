import { secondsSetting, THROUGHPUT_KEY_TYPES, throughputKeyProblem } from "../settingsChecks";
import { gcraLimit, type GcraLimit } from "./gcra";

/** A throughput-gate's properties as the flow JSON gives them (SPEC §11). */
export interface RawThroughputSettings {
  rate?: unknown;
  interval?: unknown;
  burst?: unknown;
  key?: unknown;
  keyType?: unknown;
  disposition?: unknown;
  maxWait?: unknown;
}

export interface ThroughputSettings {
  rate: number;
  intervalSeconds: number;
  burst: number;
  limit: GcraLimit;
  disposition: "queue" | "skip";
  maxWaitMs: number;
  keyType: string;
  key: string;
}

function numberSetting(field: string, value: unknown, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new Error(`${field}: must be a number, got ${JSON.stringify(value)}`);
  return n;
}

/** The gate's own settings, checked at deploy; a bad one names its property (SPEC §11 defaults). */
export function throughputSettings(def: RawThroughputSettings): ThroughputSettings {
  const rate = numberSetting("rate", def.rate, 10);
  const intervalSeconds = numberSetting("interval", def.interval, 1);
  // burst defaults to the rate: a second's worth may go at once, as a provider's per-second contract allows
  const burst = numberSetting("burst", def.burst, Math.max(1, Math.round(rate)));
  const limit = gcraLimit(rate, intervalSeconds, burst);
  const disposition = def.disposition || "queue";
  if (disposition !== "queue" && disposition !== "skip") throw new Error(`disposition: must be queue or skip, got ${JSON.stringify(disposition)}`);
  const keyType = typeof def.keyType === "string" && def.keyType !== "" ? def.keyType : def.keyType ? JSON.stringify(def.keyType) : "org";
  const key = typeof def.key === "string" ? def.key : def.key === undefined || def.key === null ? "" : JSON.stringify(def.key);
  const keyProblem = throughputKeyProblem(keyType, key);
  if (keyProblem === "keyType") throw new Error(`keyType: must be one of ${THROUGHPUT_KEY_TYPES.join(", ")}, got ${JSON.stringify(keyType)}`);
  if (keyProblem === "key") throw new Error(`key: a ${keyType} key needs a property, expression or text`);
  return { rate, intervalSeconds, burst, limit, disposition, maxWaitMs: secondsSetting("maxWait", def.maxWait, 60) * 1000, keyType, key };
}

