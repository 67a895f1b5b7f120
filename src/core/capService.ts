import type { AdmissionClaim } from "./admission";
import { CapEngine } from "./caps/capEngine";
import type { CapSettings } from "./capSettings";
import { releaseClaims } from "./caps/giveBack";
import { recipientToken } from "./caps/keys";
import type { Lane } from "./sendQueue/sendQueue";
import type { AdmissionStore, ReleaseAnswer, ReleaseRequest } from "./store/admissionStore";
import type { SendRules } from "./send";
import { StoreAccess } from "./store/storeAccess";
import type { RulesProvider } from "./rules/rulesProvider";
import { SuppressionEngine } from "./suppression/suppressionEngine";
import type { DeferQueue } from "./hold/heldQueue";
import type { GateRegistry } from "./hold/gateRegistry";
import { Deferrals } from "./hold/deferrals";
import { AdmissionMetrics } from "./metrics/admissionMetrics";
import { RuleCacheStats } from "./rules/ruleCache";
import { ThroughputLimiter } from "./throughput/throughputLimiter";
import { withTimeout } from "./store/withTimeout";
import { DecisionHistory } from "./history/decisionHistory";
import type { CapRule } from "./rules/rules";

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

/** Where a cap-config's gates hold msgs: a queue per gate, and which gates run (on this instance or any). */
export interface HeldQueues {
  open(gate: string): DeferQueue;
  registry: GateRegistry;
  /** the first time a gate runs in this process (the data of an older version moved into its queue) */
  firstUse?(gate: string): Promise<number>;
  close?(): void;
}

/** A store's state kept in a file (the memory store's): saved now and then, and on close. */
export interface StateSaver {
  save(): Promise<void>;
  close(): Promise<void>;
}

/**
 * What a cap-config is built from, chosen by its settings outside the core
 * (src/service/createCapService.ts): the store, its held-msg queues, where
 * rules come from (given the block list, which PostgreSQL keeps too), and for
 * the memory store its file.
 */
export interface CapServiceParts {
  store: AdmissionStore;
  heldQueues: HeldQueues;
  rules(suppression: SuppressionEngine, cacheStats: RuleCacheStats): RulesProvider;
  stateFile?: StateSaver;
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
  /** each recipient's last verdicts, for `GET …/history` and the sidebar's inspector */
  readonly history: DecisionHistory;

  readonly rules: RulesProvider;
  private readonly releases: Lane<ReleaseRequest, ReleaseAnswer>;
  readonly store: AdmissionStore;
  private readonly heldQueues: HeldQueues;
  private readonly hmacSecret: string | undefined;
  private snapshotTimer: NodeJS.Timeout | undefined;
  /** where a memory store's state is saved (none: another store, or no file given) */
  private readonly stateFile: StateSaver | undefined;
  /** closing gates' last msgs, which still need the store (see drainBeforeClose) */
  private readonly draining = new Set<Promise<void>>();

  constructor(
    readonly settings: CapSettings,
    parts: CapServiceParts,
    secrets: CapSecrets,
    private readonly log: CapLog,
    private readonly env: CapServiceEnvironment,
  ) {
    const store = parts.store;
    this.store = store;
    this.heldQueues = parts.heldQueues;
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
    this.releases = this.access.lane("release", (s, items, early) => s.release(items, early), { bounded: false });
    let historyLostSaid = false;
    this.history = new DecisionHistory(store, {
      keyPrefix: settings.keyPrefix, size: settings.historySize,
      onLost: (entries, err) => {
        // a diagnosis, not a msg: said once a deployment, counted in the metrics
        if (!historyLostSaid) log.warn(`decision history: ${entries} verdict(s) not written (${err.message}); more may follow unsaid`);
        historyLostSaid = true;
      },
    });
    const hmac = settings.hashRecipients && secrets.hmacSecret ? { hmacSecret: secrets.hmacSecret } : {};
    this.hmacSecret = hmac.hmacSecret;
    this.engine = new CapEngine({
      access: this.access,
      rules: (org, channel) => this.historyLearns(this.rules.rulesFor(org, channel)),
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
    this.rules = parts.rules(this.suppression, cacheStats);
    const held = parts.heldQueues;
    this.deferrals = new Deferrals({
      openQueue: (gate) => held.open(gate), registry: held.registry, access: this.access, warn: (text) => log.warn(text),
      ...(held.firstUse ? { firstUse: (gate: string) => (held.firstUse as (g: string) => Promise<number>)(gate) } : {}),
    });
    this.stateFile = parts.stateFile;
    if (this.stateFile) {
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

  /**
   * For the admin API: with rules in PostgreSQL, waits (at most `timeoutMs`)
   * until the database was first reached, so the caps and the durable block
   * list can be written; throws RulesUnavailableError after that.
   */
  async adminReady(timeoutMs = ADMIN_WAIT_MS): Promise<void> {
    await this.rules.whenReady?.(timeoutMs);
  }

  /** Rules a send is judged by, seen by the history on their way: it lives as long as the longest window. */
  private historyLearns(rules: readonly CapRule[] | Promise<readonly CapRule[]>): readonly CapRule[] | Promise<readonly CapRule[]> {
    if (!this.history.enabled) return rules;
    if (!(rules instanceof Promise)) {
      this.history.sawRules(rules);
      return rules;
    }
    return rules.then((list) => {
      this.history.sawRules(list);
      return list;
    });
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
    await withTimeout(this.history.close(), DRAIN_MS, undefined);
    this.heldQueues.close?.();
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
