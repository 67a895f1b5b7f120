import { CapEngine } from "./capEngine";
import { readCapSettings, type CapSettings, type RawCapSettings } from "./capSettings";
import { ConfigError, RuleValidationError } from "./errors";
import type { CapRule } from "./rules";
import type { SendRules } from "./send";
import { validateRules } from "./schema/validateRules";
import type { AdmissionStore } from "./stores/admissionStore";
import { MemoryStore } from "./stores/memoryStore";
import { RedisStore } from "./stores/redisStore";

export interface CapSecrets {
  redisPassword?: string;
  hmacSecret?: string;
}

export interface CapLog {
  warn(text: string): void;
  error(text: string): void;
}

function createStore(settings: CapSettings, secrets: CapSecrets, log: CapLog): AdmissionStore {
  if (settings.store === "memory") return new MemoryStore();
  let lastError = "";
  return new RedisStore({
    url: settings.redisUrl,
    ...(settings.store === "redis-cluster" ? { clusterNodes: settings.redisNodes } : {}),
    ...(secrets.redisPassword ? { password: secrets.redisPassword } : {}),
    onError: (err) => {
      // ioredis repeats the same error on every reconnect attempt: say it once
      if (err.message !== lastError) log.warn(`redis store: ${err.message}`);
      lastError = err.message;
    },
  });
}

/**
 * What one cap-config owns: checked settings, validated rules, the counter
 * store and the engine that claims in it. Knows nothing of Node-RED.
 */
export class CapService {
  readonly engine: CapEngine;
  readonly sendRules: SendRules;

  private constructor(
    readonly settings: CapSettings,
    readonly rules: CapRule[],
    readonly store: AdmissionStore,
    secrets: CapSecrets,
    log: CapLog,
  ) {
    this.sendRules = { channels: settings.channels, defaultOrg: settings.defaultOrg, requireTier: settings.requireTier };
    this.engine = new CapEngine({
      store,
      rules: () => this.rules,
      keyPrefix: settings.keyPrefix,
      exemptTiers: settings.exemptTiers,
      failMode: settings.failMode,
      timeoutMs: settings.timeoutMs,
      ...(settings.hashRecipients && secrets.hmacSecret ? { hmacSecret: secrets.hmacSecret } : {}),
      warn: (text) => log.warn(text),
    });
  }

  /** Builds the service, or throws naming every bad property and rule (nothing is half-started). */
  static create(raw: RawCapSettings, secrets: CapSecrets, log: CapLog): CapService {
    const { settings, problems } = readCapSettings(raw);
    if (settings.hashRecipients && !secrets.hmacSecret) problems.push("hmacSecret: hashRecipients needs the HMAC secret credential");
    let rules: CapRule[] = [];
    try {
      rules = validateRules(settings.rules, settings.channels);
    } catch (err) {
      if (!(err instanceof RuleValidationError)) throw err;
      problems.push(...err.problems);
    }
    if (problems.length > 0) throw new ConfigError(problems);
    return new CapService(settings, rules, createStore(settings, secrets, log), secrets, log);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
