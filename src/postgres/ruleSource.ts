import type { Pool } from "pg";
import type { CapRule } from "../core/rules/rules";
import { isDatabaseUnreachable, RulesUnavailableError } from "../core/rules/errors";
import type { InvalidationBus, RuleChange } from "../core/rules/invalidationBus";
import { migrateRulesTable } from "./rulesTable";
import { createRulesPool } from "./pool";
import { PgRuleRepository, type RemovedRule, type RuleListing } from "./ruleRepository";
import { RuleCache, type RuleCacheStats, type RulesState } from "../core/rules/ruleCache";
import type { StoredRule } from "./ruleRow";
import { rulesTable, type RulesTable } from "./tableName";

export interface PgRuleSourceOptions {
  /** cap-config `pgUrl` */
  url: string;
  /** cap-config credential `pgPassword` */
  password?: string;
  /** cap-config `pgTable` (`frequency_caps`), `table` or `schema.table` */
  table?: string;
  /** a channel rule naming another channel is skipped (rows) or refused (writes) */
  knownChannels?: readonly string[];
  ttlMs?: number;
  retryMs?: number;
  maxKeys?: number;
  /** carries changes to the other instances; owned (closed) by the source. Without it only this instance learns of writes. */
  bus?: InvalidationBus;
  /** how long a write waits for the bus before giving up on telling the others (1 s; they catch up within the TTL) */
  publishTimeoutMs?: number;
  warn: (text: string) => void;
  /** the cache's hits, misses and invalidations, for the metrics */
  cacheStats?: RuleCacheStats;
}

export const DEFAULT_RULES_TABLE = "frequency_caps";

/**
 * Rules kept in PostgreSQL (SPEC §7): migrated on open, read through the cache,
 * and written so that the change gates the very next send on every instance.
 */
export class PgRuleSource {
  readonly cache: RuleCache;
  private readonly unsubscribe: (() => void) | undefined;
  private closed: Promise<void> | undefined;

  private constructor(
    readonly pool: Pool,
    readonly repository: PgRuleRepository,
    private readonly options: PgRuleSourceOptions,
  ) {
    this.cache = new RuleCache({
      load: (org, channel) => repository.rulesFor(org, channel),
      warn: options.warn,
      ...(options.ttlMs !== undefined ? { ttlMs: options.ttlMs } : {}),
      ...(options.retryMs !== undefined ? { retryMs: options.retryMs } : {}),
      ...(options.maxKeys !== undefined ? { maxKeys: options.maxKeys } : {}),
      ...(options.cacheStats ? { stats: options.cacheStats } : {}),
    });
    this.unsubscribe = options.bus?.subscribe((event) => {
      if (event.kind === "resync") this.cache.invalidateAll();
      else this.cache.invalidate(event.org, event.channel);
    });
  }

  /** Connects, applies the migration (idempotent) and starts listening; throws (with nothing left open) when it cannot. */
  static async open(options: PgRuleSourceOptions): Promise<PgRuleSource> {
    let pool: Pool | undefined;
    let table: RulesTable;
    try {
      table = rulesTable(options.table ?? DEFAULT_RULES_TABLE);
      pool = createRulesPool({ url: options.url, ...(options.password ? { password: options.password } : {}) });
      await migrateRulesTable(pool, table);
    } catch (err) {
      await Promise.all([pool?.end(), options.bus?.close()].map((p) => Promise.resolve(p).catch(() => undefined)));
      throw err;
    }
    const repository = new PgRuleRepository({
      db: pool,
      table,
      warn: options.warn,
      ...(options.knownChannels ? { knownChannels: options.knownChannels } : {}),
    });
    return new PgRuleSource(pool, repository, options);
  }

  /** The enabled rules of a send on (org, channel), with the org's global ones; from memory while fresh. */
  rulesFor(org: string, channel: string): Promise<readonly CapRule[]> {
    return this.cache.get(org, channel);
  }

  /** The fresh cached rules of (org, channel), or undefined; never loads. */
  peek(org: string, channel: string): readonly CapRule[] | undefined {
    return this.cache.peek(org, channel);
  }

  state(): RulesState {
    return this.cache.state();
  }

  onStateChange(listener: (state: RulesState) => void): () => void {
    return this.cache.onStateChange(listener);
  }

  list(org: string): Promise<RuleListing> {
    return this.repository.list(org);
  }

  get(org: string, id: string): Promise<StoredRule | null> {
    return this.repository.get(org, id);
  }

  async create(org: string, input: unknown): Promise<StoredRule> {
    const rule = await unreachableAsUnavailable(() => this.repository.create(org, input));
    await this.changed(org, [rule.channel]);
    return rule;
  }

  async update(org: string, id: string, input: unknown): Promise<StoredRule | null> {
    const updated = await unreachableAsUnavailable(() => this.repository.update(org, id, input));
    if (!updated) return null;
    await this.changed(org, [updated.previousChannel, updated.rule.channel]);
    return updated.rule;
  }

  async remove(org: string, id: string): Promise<RemovedRule | null> {
    const removed = await unreachableAsUnavailable(() => this.repository.remove(org, id));
    if (removed) await this.changed(org, [removed.channel]);
    return removed;
  }

  /** Ends the pool and the bus; resolves once every connection is closed. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      this.unsubscribe?.();
      await Promise.all([
        this.pool.end(),
        this.options.bus?.close() ?? Promise.resolve(),
      ]);
    })();
    return this.closed;
  }

  /** Invalidates here at once, then tells the other instances (a global write touches every channel). */
  private async changed(org: string, channels: string[]): Promise<void> {
    const changes: RuleChange[] = channels.includes("*")
      ? [{ org, channel: "*" }]
      : [...new Set(channels)].map((channel) => ({ org, channel }));
    for (const change of changes) this.cache.invalidate(change.org, change.channel);
    const bus = this.options.bus;
    if (!bus) return;
    await Promise.all(changes.map((change) => this.publish(bus, change)));
  }

  private async publish(bus: InvalidationBus, change: RuleChange): Promise<void> {
    const timeoutMs = this.options.publishTimeoutMs ?? 1_000;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), timeoutMs);
    });
    try {
      const outcome = await Promise.race([bus.publish(change).then(() => "sent" as const), late]);
      if (outcome === "late") throw new Error(`no answer within ${timeoutMs} ms`);
    } catch (err) {
      this.options.warn(`frequency cap change of org "${change.org}", channel "${change.channel}" not announced to other instances `
        + `(${(err as Error).message}); they see it when their cached rules expire`);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * A write PostgreSQL could not take because it was down or went away is a
 * RulesUnavailableError (the admin API answers 503, SPEC 7), not an unknown
 * failure (before, a write during a restart answered 500 with the socket error).
 */
async function unreachableAsUnavailable<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isDatabaseUnreachable(err)) throw new RulesUnavailableError(`the rules database is not reachable, nothing was written: ${(err as Error).message}`, err);
    throw err;
  }
}
