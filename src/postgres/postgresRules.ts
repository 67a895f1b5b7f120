import type { CapRule } from "../core/rules/rules";
import type { RulesProvider, RulesProviderState } from "../core/rules/rulesProvider";
import { StateHolderOf } from "../core/store/stateEmitter";
import { RulesUnavailableError } from "../core/rules/errors";
import { PgRuleSource, type PgRuleSourceOptions } from "./ruleSource";

const RETRY_OPEN_MS = [1000, 2000, 5000, 10_000, 30_000];

/**
 * Rules from PostgreSQL for a cap-config. Opening (connect + migration) may
 * fail at deploy when the database is down: it is retried in the background,
 * and until it succeeds every send's rules are unavailable (the fail mode
 * decides), with one warning per outage.
 */
export class PostgresRules implements RulesProvider {
  readonly source = "postgres" as const;
  private pgSource: PgRuleSource | undefined;
  private readonly firstAttempt: Promise<void>;
  /** the open in progress (the first, or a retry) */
  private attempt: Promise<void>;
  private readonly stateHolder = new StateHolderOf<RulesProviderState>("unavailable");
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private attempts = 0;
  private lastError = "";
  private markOpen: (source: PgRuleSource) => void = () => undefined;
  /** resolves once PostgreSQL has been reached (never rejects: retries go on until close) */
  private readonly opened = new Promise<PgRuleSource>((resolve) => { this.markOpen = resolve; });

  constructor(
    private readonly options: () => PgRuleSourceOptions,
    /** runs once PostgreSQL is reached (the block list's table and load use the same pool) */
    private readonly onOpen?: (source: PgRuleSource) => Promise<void>,
  ) {
    this.firstAttempt = this.attempt = this.open();
  }

  /** The open source, for the admin API; throws while PostgreSQL has not been reached. */
  get ruleSource(): PgRuleSource {
    if (!this.pgSource) throw this.unreachable();
    return this.pgSource;
  }

  /**
   * The open source, waiting up to `timeoutMs` for the first connection: an
   * admin call made right after a deploy is answered once the database is
   * reached, instead of being refused while a send at the same moment waits.
   */
  whenReady(timeoutMs: number): Promise<PgRuleSource> {
    return this.whenOpen(timeoutMs);
  }

  async whenOpen(timeoutMs: number): Promise<PgRuleSource> {
    if (this.pgSource) return this.pgSource;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), timeoutMs); });
    try {
      const source = await Promise.race([this.opened, late]);
      if (!source || this.closed) throw this.unreachable();
      return source;
    } finally {
      clearTimeout(timer);
    }
  }

  private unreachable(): RulesUnavailableError {
    return new RulesUnavailableError(`rules database not reachable yet${this.lastError ? `: ${this.lastError}` : ""}`);
  }

  rulesFor(org: string, channel: string): readonly CapRule[] | Promise<readonly CapRule[]> {
    const source = this.pgSource;
    if (source) return source.peek(org, channel) ?? source.rulesFor(org, channel);
    return this.firstAttempt.then(() => this.ruleSource.rulesFor(org, channel));
  }

  state(): RulesProviderState {
    return this.stateHolder.get();
  }

  onStateChange(listener: (state: RulesProviderState) => void): () => void {
    return this.stateHolder.subscribe(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.attempt;
    await this.pgSource?.close();
  }

  private async open(): Promise<void> {
    const options = this.options();
    try {
      const source = await PgRuleSource.open(options);
      if (this.closed) {
        await source.close();
        return;
      }
      if (this.onOpen) {
        await this.onOpen(source).catch((err: Error) => options.warn(`after reaching the rules database: ${err.message}`));
      }
      if (this.closed) {
        await source.close();
        return;
      }
      this.pgSource = source;
      this.markOpen(source);
      if (this.attempts > 0) options.warn("rules database reached: caps from PostgreSQL are in force again");
      this.stateHolder.set(source.state());
      source.onStateChange((state) => this.stateHolder.set(state));
    } catch (err) {
      this.lastError = (err as Error).message;
      if (this.attempts === 0) options.warn(`rules database not reachable (${this.lastError}); retrying, the fail mode decides sends meanwhile`);
      const delay = RETRY_OPEN_MS[Math.min(this.attempts, RETRY_OPEN_MS.length - 1)];
      this.attempts++;
      if (!this.closed) {
        this.retryTimer = setTimeout(() => { this.attempt = this.open(); }, delay);
        this.retryTimer.unref();
      }
    }
  }
}
