import Redis, { Cluster } from "ioredis";
import { CapService, type CapLog, type CapSecrets, type CapServiceEnvironment, type CapServiceParts, type HeldQueues } from "../core/capService";
import { readCapSettings, type CapSettings, type RawCapSettings } from "../core/capSettings";
import { ConfigError, RuleValidationError } from "../core/errors";
import { deferCodec, type DeferCodec } from "../core/hold/codec";
import { LocalGateRegistry } from "../core/hold/gateRegistry";
import { MemoryDeferStore } from "../core/hold/memoryHeldQueues";
import type { CapRule } from "../core/rules/rules";
import { InlineRules, type RulesProvider } from "../core/rules/rulesProvider";
import type { RuleCacheStats } from "../core/rules/ruleCache";
import { englishMessages } from "../core/schema/catalog";
import { validateRules } from "../core/schema/validateRules";
import { loadSnapshot } from "../core/store/memoryPersistence";
import { MemoryStateFile } from "../core/store/memoryStateFile";
import { MemoryStore } from "../core/store/memoryStore";
import type { SuppressionEngine } from "../core/suppression/suppressionEngine";
import { redisMigrations, legacyMemoryQueue, upgradeMemorySnapshot } from "../migrations/migrations";
import { PostgresRules } from "../postgres/postgresRules";
import type { PgRuleSource } from "../postgres/ruleSource";
import { PgSuppressions } from "../postgres/suppressions";
import { rulesTable } from "../postgres/tableName";
import { clusterSeeds } from "../redis/connection";
import { RedisGateRegistry } from "../redis/gateRegistry";
import { RedisDeferQueue } from "../redis/redisHeldQueue";
import { RedisInvalidationBus } from "../redis/invalidationBus";
import { RedisStore } from "../redis/redisStore";

/**
 * Builds a cap-config's service from its properties, or throws naming every
 * bad property and rule (nothing is half-started). Here, and only here, the
 * settings choose the parts: the embedded store or Redis, its held-msg
 * queues, inline rules or PostgreSQL (with a Redis bus between instances),
 * and the migrations of older data; the core works with whatever it is given.
 */
export function createCapService(raw: RawCapSettings, secrets: CapSecrets, log: CapLog, env: CapServiceEnvironment = {}): CapService {
  const { settings, problems } = readCapSettings(raw);
  if (settings.hashRecipients && !secrets.hmacSecret) problems.push(`hmacSecret: ${englishMessages()("cap-config.errors.hmacSecret")}`);
  let rules: CapRule[] = [];
  try {
    if (settings.rulesSource === "inline") rules = validateRules(settings.rules, settings.channels);
  } catch (err) {
    if (!(err instanceof RuleValidationError)) throw err;
    problems.push(...err.problems);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const codec = deferCodec(secrets.hmacSecret || undefined, settings.hashRecipients && Boolean(secrets.hmacSecret));
  const parts = settings.store === "memory" ? memoryParts(log, env, codec) : redisParts(settings, secrets, log, env, codec);
  return new CapService(settings, { ...parts, rules: (suppression, stats) => createRules(settings, rules, secrets, log, suppression, stats) }, secrets, log, env);
}

/** A held msg that cannot be read back is dropped, saying which. */
function damaged(log: CapLog): (gate: string, id: string, err: Error) => void {
  return (gate, id, err) => log.error(`held msg ${id} of gate ${gate} cannot be read back and was dropped: ${err.message}`);
}

/** The embedded store, restored from its file, and its held msgs in a journal beside it. */
function memoryParts(log: CapLog, env: CapServiceEnvironment, codec: DeferCodec): Omit<CapServiceParts, "rules"> {
  const store = new MemoryStore();
  if (env.memoryStateFile) {
    try {
      const saved = loadSnapshot(env.memoryStateFile, upgradeMemorySnapshot);
      if (saved) store.restore(saved);
    } catch (err) {
      log.warn(`memory store: could not restore ${env.memoryStateFile}: ${(err as Error).message}`);
    }
  }
  const warn = (text: string): void => log.warn(text);
  const older = env.legacyMemoryDeferFile ? legacyMemoryQueue(env.legacyMemoryDeferFile, warn) : undefined;
  let held: MemoryDeferStore;
  try {
    held = new MemoryDeferStore({ ...(env.memoryDeferFile ? { file: env.memoryDeferFile } : {}), ...(older ? { adopt: older } : {}), codec, warn, onDamaged: damaged(log) });
  } catch (err) {
    // the file is left as it is (nothing is compacted over it); msgs held from now on live in memory only
    log.error(`memory defer queue: cannot use ${String(env.memoryDeferFile)} (${(err as Error).message}): held msgs are NOT kept past this process`);
    held = new MemoryDeferStore({ codec, warn, onDamaged: damaged(log) });
  }
  const heldQueues: HeldQueues = { open: (gate) => held.queue(gate), registry: new LocalGateRegistry(() => held.gates()), close: () => held.close() };
  return { store, heldQueues, ...(env.memoryStateFile ? { stateFile: new MemoryStateFile(store, env.memoryStateFile) } : {}) };
}

/** Redis or a Redis Cluster: the store, its held-msg queues, and the data of 0.1 moved once. */
function redisParts(settings: CapSettings, secrets: CapSecrets, log: CapLog, env: CapServiceEnvironment, codec: DeferCodec): Omit<CapServiceParts, "rules"> {
  let lastError = "";
  const store = new RedisStore({
    url: settings.redisUrl,
    ...(settings.store === "redis-cluster" ? { clusterNodes: settings.redisNodes, slotDeadlineMs: Math.max(1, Math.floor(settings.timeoutMs * 0.9)) } : {}),
    ...(secrets.redisPassword ? { password: secrets.redisPassword } : {}),
    onError: (err) => {
      // ioredis repeats the same error on every reconnect attempt: say it once
      if (err.message !== lastError) log.warn(`redis store: ${err.message}`);
      lastError = err.message;
    },
  });
  const configId = env.configId ?? "cap-config";
  const scope = (gate: string): { keyPrefix: string; configId: string; gate: string } => ({ keyPrefix: settings.keyPrefix, configId, gate });
  const migrations = redisMigrations(store.client, settings.keyPrefix, (text) => log.warn(text));
  store.client.once("ready", () => migrations.atStart());
  const onDamaged = damaged(log);
  const heldQueues: HeldQueues = {
    open: (gate) => new RedisDeferQueue(store.client, scope(gate), { codec, onDamaged: (id, err) => onDamaged(gate, id, err) }),
    registry: new RedisGateRegistry(store.client, settings.keyPrefix, configId),
    firstUse: (gate) => migrations.forGate(scope(gate)),
  };
  return { store: store, heldQueues };
}

/** Another connection to the store's Redis (pub/sub needs its own), for rule changes between instances. */
function redisConnector(settings: CapSettings, secrets: CapSecrets): (() => Redis | Cluster) | undefined {
  if (settings.store === "memory") return undefined;
  const options = { ...(secrets.redisPassword ? { password: secrets.redisPassword } : {}), maxRetriesPerRequest: 1 };
  if (settings.store === "redis-cluster") return () => new Cluster(clusterSeeds(settings.redisNodes), { redisOptions: options });
  return () => new Redis(settings.redisUrl, options);
}

/**
 * PostgreSQL also keeps the block list: its table is made beside the rules
 * table and written through from then on; its rows are read into the store in
 * the background, so a large list does not hold up the first sends.
 */
async function attachDurableBlockList(source: PgRuleSource, settings: CapSettings, suppression: SuppressionEngine, log: CapLog): Promise<void> {
  const durable = await PgSuppressions.open(source.pool, rulesTable(settings.pgTable));
  suppression.attachMirror(durable);
  void (async () => {
    for await (const page of durable.all()) await suppression.restore(page);
  })().catch((err: Error) => log.warn(`reading the block list from PostgreSQL: ${err.message}`));
}

function createRules(settings: CapSettings, rules: CapRule[], secrets: CapSecrets, log: CapLog, suppression: SuppressionEngine, cacheStats: RuleCacheStats): RulesProvider {
  if (settings.rulesSource === "inline") return new InlineRules(rules);
  const connect = redisConnector(settings, secrets);
  return new PostgresRules(() => ({
    url: settings.pgUrl,
    table: settings.pgTable,
    knownChannels: settings.channels,
    warn: (text) => log.warn(text),
    cacheStats,
    ...(secrets.pgPassword ? { password: secrets.pgPassword } : {}),
    ...(connect ? { bus: new RedisInvalidationBus({ connect, keyPrefix: settings.keyPrefix, onError: (err) => log.warn(`rule change bus: ${err.message}`) }) } : {}),
  }), (source) => attachDurableBlockList(source, settings, suppression, log));
}
