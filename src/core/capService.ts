import type { AdmissionClaim } from "./admission";
import { CapEngine } from "./caps/capEngine";
import { readCapSettings, type CapSettings, type RawCapSettings } from "./capSettings";
import { releaseClaims } from "./caps/giveBack";
import { recipientToken } from "./caps/keys";
import type { Lane } from "./sendQueue/sendQueue";
import type { ReleaseAnswer, ReleaseRequest } from "./store/admissionStore";
import { ConfigError, RuleValidationError } from "./errors";
import type { CapRule } from "./rules/rules";
import type { SendRules } from "./send";
import { englishMessages } from "./schema/catalog";
import { validateRules } from "./schema/validateRules";
import { StoreAccess } from "./store/storeAccess";
import type { AdmissionStore } from "./store/admissionStore";
import { loadSnapshot } from "./store/memoryPersistence";
import { MemoryStateFile } from "./store/memoryStateFile";
import { MemoryStore } from "./store/memoryStore";
import { migrateLegacyCounters } from "../migrations/counters";
import { RedisStore } from "../redis/redisStore";
import { clusterSeeds } from "../redis/connection";
import Redis, { Cluster } from "ioredis";
import { PostgresRules } from "../postgres/postgresRules";
import { RedisInvalidationBus } from "../redis/invalidationBus";
import { InlineRules, type RulesProvider } from "./rules/rulesProvider";
import type { PgRuleSource } from "../postgres/ruleSource";
import { rulesTable } from "../postgres/tableName";
import { PgSuppressions } from "../postgres/suppressions";
import { SuppressionEngine } from "./suppression/suppressionEngine";
import { deferCodec } from "./hold/codec";
import { LocalGateRegistry, RedisGateRegistry } from "./hold/gateRegistry";
import { MemoryDeferStore } from "./hold/memoryHeldQueues";
import { migrateLegacyQueue } from "../migrations/queue";
import { RedisDeferQueue } from "../redis/redisHeldQueue";
import { Deferrals } from "./hold/deferrals";
import { AdmissionMetrics } from "./metrics/admissionMetrics";
import { RuleCacheStats } from "./rules/ruleCache";
import { ThroughputLimiter } from "./throughput/throughputLimiter";
import { withTimeout } from "./store/withTimeout";

/** How long an admin call made right after a deploy waits for PostgreSQL before answering 503. */
export const ADMIN_WAIT_MS = 5000;

export interface CapSecrets {
  redisPassword?: string;
  pgPassword?: string;
  hmacSecret?: string;
}

export interface CapLog {
  warn(text: string): void;
  error(text: string): void;
}

export interface CapServiceEnvironment {
  /** the cap-config's node id: its gates' held msgs are kept under it (two cap-configs never share a queue), and its metrics carry it as the `config` label */
  configId?: string;
  /** where a memory store keeps its state between deploys and restarts; none = not kept */
  memoryStateFile?: string;
  /** where the memory store's held msgs are journalled between deploys and restarts */
  memoryDeferFile?: string;
  /** the memory defer queue file of the version before the journal: imported once, then removed */
  legacyMemoryDeferFile?: string;
}

/** How often a memory store's counters and block list are written to its file (also on close, and at once after a block-list change). */
export const MEMORY_SNAPSHOT_MS = 5_000;

function createDeferrals(store: AdmissionStore, settings: CapSettings, secrets: CapSecrets, env: CapServiceEnvironment, log: CapLog, access: StoreAccess): { deferrals: Deferrals; memory?: MemoryDeferStore } {
  const configId = env.configId ?? "cap-config";
  const codec = deferCodec(secrets.hmacSecret || undefined, settings.hashRecipients && Boolean(secrets.hmacSecret));
  const warn = (text: string): void => log.warn(text);
  const damaged = (gate: string, id: string, err: Error): void => log.error(`held msg ${id} of gate ${gate} cannot be read back and was dropped: ${err.message}`);
  if (store instanceof RedisStore) {
    const client = store.client;
    const scope = (gate: string) => ({ keyPrefix: settings.keyPrefix, configId, gate });
    return {
      deferrals: new Deferrals({
        openQueue: (gate) => new RedisDeferQueue(client, scope(gate), { codec, onDamaged: (id, err) => damaged(gate, id, err) }),
        registry: new RedisGateRegistry(client, settings.keyPrefix, configId),
        migrate: (gate) => migrateLegacyQueue(client, scope(gate)),
        access, warn,
      }),
    };
  }
  let memory: MemoryDeferStore;
  try {
    memory = new MemoryDeferStore({
      ...(env.memoryDeferFile ? { file: env.memoryDeferFile } : {}),
      ...(env.legacyMemoryDeferFile ? { legacyFile: env.legacyMemoryDeferFile } : {}),
      codec, warn, onDamaged: damaged,
    });
  } catch (err) {
    // the file is left as it is (nothing is compacted over it); msgs held from now on live in memory only
    log.error(`memory defer queue: cannot use ${String(env.memoryDeferFile)} (${(err as Error).message}): held msgs are NOT kept past this process`);
    memory = new MemoryDeferStore({ codec, warn, onDamaged: damaged });
  }
  return {
    deferrals: new Deferrals({ openQueue: (gate) => memory.queue(gate), registry: new LocalGateRegistry(() => memory.gates()), access, warn }),
    memory,
  };
}

function createStore(settings: CapSettings, secrets: CapSecrets, log: CapLog, env: CapServiceEnvironment): AdmissionStore {
  if (settings.store === "memory") {
    const store = new MemoryStore();
    if (env.memoryStateFile) {
      try {
        const saved = loadSnapshot(env.memoryStateFile);
        if (saved) store.restore(saved);
      } catch (err) {
        log.warn(`memory store: could not restore ${env.memoryStateFile}: ${(err as Error).message}`);
      }
    }
    return store;
  }
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
  store.client.once("ready", () => {
    migrateLegacyCounters(store.client, settings.keyPrefix).then(
      (moved) => { if (moved > 0) log.warn(`redis store: moved ${moved} counters of version 0.1 under "${settings.keyPrefix}" to the 0.2 layout`); },
      (err: Error) => log.warn(`redis store: moving the counters of version 0.1 failed (they will be tried again at the next start): ${err.message}`),
    );
  });
  return store;
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

/** How long a closing cap-config waits for its closing gates' last msgs (Node-RED gives a node 15 s to close). */
export const DRAIN_MS = 10_000;

/**
 * What one cap-config owns: checked settings, validated rules, the store and
 * the engines that work in it. Knows nothing of Node-RED.
 */
export class CapService {
  readonly access: StoreAccess;
  readonly engine: CapEngine;
  readonly suppression: SuppressionEngine;
  readonly deferrals: Deferrals;
  /** throughput ceilings (GCRA), shared by every instance on the same store */
  readonly throughput: ThroughputLimiter;
  readonly sendRules: SendRules;
  /** its gates' outcomes and its send path's state, for `GET …/metrics` and the editor's sidebar */
  readonly metrics: AdmissionMetrics;

  readonly rules: RulesProvider;
  private readonly releases: Lane<ReleaseRequest, ReleaseAnswer>;
  private readonly memoryDefer: MemoryDeferStore | undefined;
  private readonly hmacSecret: string | undefined;
  private snapshotTimer: NodeJS.Timeout | undefined;
  /** where a memory store's state is saved (none: another store, or no file given) */
  private readonly stateFile: MemoryStateFile | undefined;
  /** closing gates' last msgs, which still need the store (see drainBeforeClose) */
  private readonly draining = new Set<Promise<void>>();

  private constructor(
    readonly settings: CapSettings,
    inlineRules: CapRule[],
    readonly store: AdmissionStore,
    secrets: CapSecrets,
    private readonly log: CapLog,
    private readonly env: CapServiceEnvironment,
  ) {
    this.sendRules = { channels: settings.channels, defaultOrg: settings.defaultOrg, requireTier: settings.requireTier };
    this.metrics = new AdmissionMetrics({
      configId: env.configId ?? "cap-config", store: store.kind, rulesSource: settings.rulesSource, failMode: settings.failMode,
      maxQueued: store.remote ? settings.maxQueued : 0,
    });
    this.access = new StoreAccess(store, {
      failMode: settings.failMode, timeoutMs: settings.timeoutMs, maxQueued: settings.maxQueued, overloadMode: settings.overloadMode, warn: (text) => log.warn(text),
      onStoreCall: (call) => this.metrics.storeCall(call),
    });
    this.throughput = new ThroughputLimiter(this.access, settings.keyPrefix);
    this.releases = this.access.lane("release", (s, items) => s.release(items), { bounded: false });
    const hmac = settings.hashRecipients && secrets.hmacSecret ? { hmacSecret: secrets.hmacSecret } : {};
    this.hmacSecret = hmac.hmacSecret;
    this.engine = new CapEngine({
      access: this.access,
      rules: (org, channel) => this.rules.rulesFor(org, channel),
      keyPrefix: settings.keyPrefix,
      exemptTiers: settings.exemptTiers,
      leaseMs: settings.leaseSeconds * 1000,
      ...hmac,
    });
    this.hmacSecret = hmac.hmacSecret;
    this.suppression = new SuppressionEngine({
      access: this.access, keyPrefix: settings.keyPrefix, mirrored: settings.rulesSource === "postgres", ...hmac,
      // an opt-out must survive a crash at once, not at the next periodic snapshot: the write is answered once it is saved
      afterWrite: () => this.trySaveMemoryState(),
    });
    const cacheStats = new RuleCacheStats();
    this.rules = createRules(settings, inlineRules, secrets, log, this.suppression, cacheStats);
    const { deferrals, memory } = createDeferrals(store, settings, secrets, env, log, this.access);
    this.deferrals = deferrals;
    this.memoryDefer = memory;
    if (store instanceof MemoryStore && env.memoryStateFile) {
      this.stateFile = new MemoryStateFile(store, env.memoryStateFile);
      this.snapshotTimer = setInterval(() => void this.trySaveMemoryState(), MEMORY_SNAPSHOT_MS);
      this.snapshotTimer.unref();
    }
    this.metrics.watch({
      storeState: () => store.state(),
      rulesState: () => this.rules.state(),
      queueLength: () => this.access.queue?.length ?? 0,
      circuit: () => ({ state: this.access.breaker.state(), opens: this.access.breaker.opens }),
      held: () => this.deferrals.heldSizes(),
      ruleCache: cacheStats,
    });
  }

  /** Builds the service, or throws naming every bad property and rule (nothing is half-started). */
  static create(raw: RawCapSettings, secrets: CapSecrets, log: CapLog, env: CapServiceEnvironment = {}): CapService {
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
    return new CapService(settings, rules, createStore(settings, secrets, log, env), secrets, log, env);
  }

  /**
   * For the admin API: with rules in PostgreSQL, waits (at most `timeoutMs`)
   * until the database was first reached, so the caps and the durable block
   * list can be written; throws RulesUnavailableError after that.
   */
  async adminReady(timeoutMs = ADMIN_WAIT_MS): Promise<void> {
    if (this.rules instanceof PostgresRules) await this.rules.whenOpen(timeoutMs);
  }

  isExempt(tier: string | undefined): boolean {
    return this.engine.isExempt(tier);
  }

  /** The recipient as the store keys it: its HMAC when hashRecipients is on, never the address. */
  recipientToken(recipient: string): string {
    return recipientToken(recipient, this.hmacSecret);
  }

  /**
   * Gives back claims this service's store holds for a msg of `recipient`
   * (a refusal later in the chain, or release mode); claims that are not this
   * msg's own are refused, untouched.
   */
  release(claims: readonly AdmissionClaim[], of: { recipient: string; org?: string }): Promise<{ given: number; claimsGiven: number; refused: AdmissionClaim[] }> {
    return releaseClaims(this.access, this.releases, claims, {
      keyPrefix: this.settings.keyPrefix,
      org: of.org ?? this.settings.defaultOrg,
      recipientToken: recipientToken(of.recipient, this.hmacSecret),
    }, (spend) => this.engine.totals.refund(spend));
  }

  /**
   * A closing gate's msgs still in flight (begun, or waiting in its intake)
   * and its cleanups: close() lets them finish (hold, claim, record; a
   * throughput-gate handing its paced msgs back to the queue) before it
   * closes the store, at most DRAIN_MS. Node-RED closes a flow's gates before
   * its config nodes, but does not wait for them: without this a redeploy or
   * a stop during a burst would close the store under the burst's last msgs,
   * or under a hand-back (its msgs would wait out their lease, then leave
   * together, over the ceiling).
   */
  drainBeforeClose(finished: Promise<void>): void {
    const tracked = finished.finally(() => this.draining.delete(tracked));
    this.draining.add(tracked);
  }

  async close(): Promise<void> {
    if (this.draining.size > 0) await withTimeout(Promise.allSettled([...this.draining]), DRAIN_MS, []);
    if (this.snapshotTimer) clearInterval(this.snapshotTimer);
    // pollers first: a release in progress finishes (and acks) before the journal is compacted
    await this.deferrals.close();
    // unspent total-cap slots go back to the pool while the store is still open
    await this.engine.totals.close();
    this.memoryDefer?.close();
    // the last save, after every one asked for (an opt-out written as it closes): the next deployment reads the file next
    await this.stateFile?.close().catch((err: Error) => this.log.warn(`memory store: could not save ${String(this.env.memoryStateFile)}: ${err.message}`));
    await Promise.all([this.store.close(), this.rules.close()]);
  }

  /**
   * Writes a memory store's counters, block list and duplicate marks (a
   * snapshot; skipped when nothing changed). Restoring it after a crash is
   * safe: it is state, not a to-do list (entries are sets keyed by messageId,
   * and entries past their window are dropped on restore); a crash loses at
   * most the counts of the last MEMORY_SNAPSHOT_MS, never a block-list change.
   */
  private async trySaveMemoryState(): Promise<void> {
    try {
      await this.stateFile?.save();
    } catch (err) {
      this.log.warn(`memory store: could not save ${String(this.env.memoryStateFile)}: ${(err as Error).message}`);
    }
  }
}
