import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { RuleCacheStats } from "../rules/ruleCache";
import type { RulesProviderState } from "../rules/rulesProvider";
import type { StoreCall } from "../sendQueue/sendQueue";
import type { CircuitState } from "../store/storeGuard";
import type { StoreState } from "../store/admissionStore";
import { GateCounts } from "./gateCounts";
import { withTimeout } from "../store/withTimeout";

/** What a cap-config is, fixed for its life (the `sendgate_info` labels). */
export interface MetricsIdentity {
  /** the cap-config's node id: every series carries it as `config` */
  configId: string;
  store: string;
  rulesSource: string;
  failMode: string;
  /** the send queue's bound (maxQueued); 0 when there is no queue (memory store) */
  maxQueued: number;
}

/** Where the gauges read the cap-config's state from, at scrape time. */
export interface MetricsSources {
  storeState(): StoreState;
  rulesState(): RulesProviderState;
  queueLength(): number;
  circuit(): { state: CircuitState; opens: number };
  /** the msgs each gate's defer queue holds */
  held(): Promise<ReadonlyMap<string, number>>;
  ruleCache: RuleCacheStats;
}

/** The state of a cap-config's send path, for the sidebar (no store call: what is known now). */
export interface ConfigSnapshot {
  id: string;
  store: string;
  storeState: StoreState;
  rulesState: RulesProviderState;
  queueLength: number;
  maxQueued: number;
  circuit: CircuitState;
  /** msgs the gates of this cap-config hold in its defer queue, as last read */
  held: number;
}

const CIRCUIT_STATES: readonly CircuitState[] = ["closed", "open", "half_open"];
const STORE_STATES: readonly StoreState[] = ["connecting", "ready", "down"];
const RULES_STATES: readonly RulesProviderState[] = ["ok", "stale", "unavailable"];
/** a store call of the send path should take well under the 50 ms default timeout */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** a scrape never waits longer than this for the defer queue's size */
const HELD_READ_MS = 1000;


/**
 * One cap-config's metrics (SPEC §7 `GET …/metrics`): a prom-client Registry
 * of its own, fed by the gates that use the cap-config (their GateCounts),
 * the send queue (each store call's round trip), the circuit breaker, the
 * defer queue and the rule cache. Counts are kept as plain numbers where
 * they happen and turned into Prometheus series when scraped.
 */
export class AdmissionMetrics {
  readonly registry = new Registry();
  private readonly gates = new Map<string, GateCounts>();
  private readonly latency: Histogram<"lane" | "result">;
  private readonly latencyByCall = new Map<string, ReturnType<Histogram<"lane" | "result">["labels"]>>();
  private sources: MetricsSources | undefined;

  constructor(readonly identity: MetricsIdentity, private readonly now: () => number = Date.now) {
    this.registry.setDefaultLabels({ config: identity.configId });
    const registers = [this.registry];
    const gates = this.gates;
    const source = (): MetricsSources | undefined => this.sources;

    new Counter({
      name: "sendgate_msgs_total",
      help: "Msgs that left a gate, by output (allowed, skipped, deferred) and reason (SPEC §3; none for a plain allowed msg), and msgs sent to Catch (outcome error, reason: invalid_send, store_unavailable, overloaded, rules_unavailable, config, other)",
      labelNames: ["gate", "gate_type", "outcome", "reason"],
      registers,
      collect() {
        this.reset();
        for (const g of gates.values()) {
          for (const [outcome, byReason] of g.left) {
            for (const [reason, n] of byReason) this.inc({ gate: g.id, gate_type: g.type, outcome, reason }, n);
          }
          for (const [reason, n] of g.errors) this.inc({ gate: g.id, gate_type: g.type, outcome: "error", reason }, n);
        }
      },
    });
    new Counter({
      name: "sendgate_msgs_held_total",
      help: "Msgs a gate took into the cap-config's defer queue (deferred or collapsed), by the reason they were refused",
      labelNames: ["gate", "gate_type", "reason"],
      registers,
      collect() {
        this.reset();
        for (const g of gates.values()) for (const [reason, n] of g.held) this.inc({ gate: g.id, gate_type: g.type, reason }, n);
      },
    });
    new Counter({
      name: "sendgate_shadow_would_refuse_total",
      help: "Admitted sends that a shadow cap (enforcement: shadow) would have refused: what enforcing it would stop",
      labelNames: ["gate", "cap_id", "org"],
      registers,
      collect() {
        this.reset();
        for (const g of gates.values()) for (const s of g.shadow.values()) this.inc({ gate: g.id, cap_id: s.cap_id, org: s.org }, s.would_refuse);
      },
    });
    this.latency = new Histogram({
      name: "sendgate_store_call_duration_seconds",
      help: "Round trip of each store call the send queue sent (one call answers a batch of msgs), by lane and result; the wait in the queue is not included",
      labelNames: ["lane", "result"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    new Gauge({
      name: "sendgate_held_msgs",
      help: "Msgs a gate holds in the cap-config's durable defer queue",
      labelNames: ["gate"],
      registers,
      async collect() {
        const s = source();
        const known = (): Map<string, number> => new Map([...gates.values()].map((g) => [g.id, g.heldNow]));
        const sizes = s ? await withTimeout(s.held(), HELD_READ_MS, known()) : known();
        this.reset();
        for (const [gate, n] of sizes) {
          gates.get(gate)?.holding(n);
          this.set({ gate }, n);
        }
      },
    });
    new Gauge({
      name: "sendgate_send_queue_length",
      help: "Store calls of msgs waiting in the cap-config's send queue or in flight, and msgs waiting in its gates' intakes",
      registers,
      collect() { this.set(source()?.queueLength() ?? 0); },
    });
    new Gauge({
      name: "sendgate_send_queue_max",
      help: "The send queue's bound (maxQueued): past it a msg gets reason overloaded; 0 for the memory store, which has no queue",
      registers,
      collect() { this.set(identity.maxQueued); },
    });
    new Gauge({
      name: "sendgate_circuit_state",
      help: "The store's circuit breaker: 1 for its current state (closed, open, half_open), 0 for the others",
      labelNames: ["state"],
      registers,
      collect() {
        const state = source()?.circuit().state ?? "closed";
        for (const s of CIRCUIT_STATES) this.set({ state: s }, s === state ? 1 : 0);
      },
    });
    new Counter({
      name: "sendgate_circuit_opens_total",
      help: "How often the store's circuit breaker opened (after repeated store faults, or a failed probe)",
      registers,
      collect() {
        this.reset();
        this.inc(source()?.circuit().opens ?? 0);
      },
    });
    new Gauge({
      name: "sendgate_store_state",
      help: "The store's connection: 1 for its current state (connecting, ready, down), 0 for the others",
      labelNames: ["state"],
      registers,
      collect() {
        const state = source()?.storeState() ?? "connecting";
        for (const s of STORE_STATES) this.set({ state: s }, s === state ? 1 : 0);
      },
    });
    new Gauge({
      name: "sendgate_rules_state",
      help: "Where the rules stand: ok, stale (PostgreSQL down, the last rules loaded serve) or unavailable (never loaded)",
      labelNames: ["state"],
      registers,
      collect() {
        const state = source()?.rulesState() ?? "ok";
        for (const s of RULES_STATES) this.set({ state: s }, s === state ? 1 : 0);
      },
    });
    const cacheCounter = (name: string, help: string, read: (stats: RuleCacheStats) => number): void => {
      new Counter({
        name, help, registers,
        collect() {
          this.reset();
          const stats = source()?.ruleCache;
          this.inc(stats ? read(stats) : 0);
        },
      });
    };
    cacheCounter("sendgate_rule_cache_hits_total", "Rule lists answered from the 30 s cache (PostgreSQL rules; 0 for inline rules)", (s) => s.hits);
    cacheCounter("sendgate_rule_cache_misses_total", "Rule lists the cache had to load, or served stale while PostgreSQL was down", (s) => s.misses);
    new Counter({
      name: "sendgate_rule_cache_invalidations_total",
      help: "Rule cache invalidations after a rule write (here or on another instance): one channel, every channel of an org (a global rule), or all",
      labelNames: ["scope"],
      registers,
      collect() {
        this.reset();
        const stats = source()?.ruleCache;
        for (const scope of ["channel", "org", "all"] as const) this.inc({ scope }, stats?.invalidations[scope] ?? 0);
      },
    });
    new Gauge({
      name: "sendgate_info",
      help: "The cap-config's store, rules source and fail mode (always 1)",
      labelNames: ["store", "rules_source", "fail_mode"],
      registers,
      collect() { this.set({ store: identity.store, rules_source: identity.rulesSource, fail_mode: identity.failMode }, 1); },
    });
  }

  /** Where the gauges read from, once the cap-config's parts exist. */
  watch(sources: MetricsSources): void {
    this.sources = sources;
  }

  /** The counts of a gate of this cap-config (made on first use; the same object for the gate's whole life). */
  gate(id: string, type: string): GateCounts {
    let counts = this.gates.get(id);
    if (!counts) this.gates.set(id, (counts = new GateCounts(id, type, this.now)));
    counts.type = type;
    return counts;
  }

  /** A gate removed from the flows: its series go. */
  forget(id: string): void {
    this.gates.delete(id);
  }

  /** A store call the send queue sent: its round trip into the latency histogram. */
  storeCall(call: StoreCall): void {
    const key = `${call.lane}\u0000${call.result}`;
    let child = this.latencyByCall.get(key);
    if (!child) this.latencyByCall.set(key, (child = this.latency.labels({ lane: call.lane, result: call.result })));
    child.observe(call.ms / 1000);
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every gate's counts (each knows its version, which changes whenever a count does). */
  gateCounts(): IterableIterator<GateCounts> {
    return this.gates.values();
  }

  /** The send path's state as known now (the held count as last read). */
  configSnapshot(): ConfigSnapshot {
    const s = this.sources;
    return {
      id: this.identity.configId,
      store: this.identity.store,
      storeState: s?.storeState() ?? "connecting",
      rulesState: s?.rulesState() ?? "ok",
      queueLength: s?.queueLength() ?? 0,
      maxQueued: this.identity.maxQueued,
      circuit: s?.circuit().state ?? "closed",
      held: [...this.gates.values()].reduce((sum, g) => sum + g.heldNow, 0),
    };
  }
}
