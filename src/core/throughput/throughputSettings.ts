import { SettingError } from "../errors";
import { numberSetting } from "../gateSettings";
import { englishMessages } from "../schema/catalog";
import type { Translate } from "../schema/messages";
import { THROUGHPUT_KEY_TYPES, throughputKeyProblem } from "../settingsChecks";
import { gcraLimit, type GcraLimit } from "./gcra";

const GATE = "throughput-gate";

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


/** The gate's own settings, checked at deploy; a bad one names its property (SPEC §11 defaults). */
export function throughputSettings(def: RawThroughputSettings, t: Translate = englishMessages()): ThroughputSettings {
  const rate = numberSetting(GATE, "rate", def.rate, t);
  const intervalSeconds = numberSetting(GATE, "interval", def.interval, t);
  // burst defaults to the rate: a second's worth may go at once, as a provider's per-second contract allows
  const burst = numberSetting(GATE, "burst", def.burst, t, rate);
  const limit = gcraLimit(rate, intervalSeconds, burst);
  const disposition = def.disposition || "queue";
  if (disposition !== "queue" && disposition !== "skip") throw new SettingError("disposition", `disposition: must be queue or skip, got ${JSON.stringify(disposition)}`);
  const keyType = typeof def.keyType === "string" && def.keyType !== "" ? def.keyType : def.keyType ? JSON.stringify(def.keyType) : "org";
  const key = typeof def.key === "string" ? def.key : def.key === undefined || def.key === null ? "" : JSON.stringify(def.key);
  const keyProblem = throughputKeyProblem(keyType, key);
  if (keyProblem === "keyType") throw new SettingError("keyType", `keyType: must be one of ${THROUGHPUT_KEY_TYPES.join(", ")}, got ${JSON.stringify(keyType)}`);
  if (keyProblem === "key") throw new SettingError("key", `key: a ${keyType} key needs a property, expression or text`);
  return { rate, intervalSeconds, burst, limit, disposition, maxWaitMs: numberSetting(GATE, "maxWait", def.maxWait, t) * 1000, keyType, key };
}

