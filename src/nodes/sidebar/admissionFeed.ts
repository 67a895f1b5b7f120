import type { AdmissionMetrics, ConfigSnapshot } from "../../core/metrics/admissionMetrics";
import { BUCKET_MS, type GateSnapshot } from "../../core/metrics/gateCounts";

/**
 * The editor's Admission sidebar subscribes to `sendgate/admission/#`:
 * `sendgate/admission/<cap-config id>` holds the cap-config's send path,
 * `sendgate/admission/<cap-config id>/<gate id>` each of its gates.
 */
export const FEED_TOPIC = "sendgate/admission";
export const FEED_INTERVAL_MS = 1000;

/** A cap-config's send path: store, held msgs, send queue, circuit. */
export interface ConfigFeedMessage {
  config: ConfigSnapshot & { name: string };
  /** the runtime's clock when this was sent, so the editor places the buckets whatever its own clock says */
  at: number;
  bucketMs: number;
}

/** One gate's counts: totals since deploy and the last five minutes. */
export interface GateFeedMessage {
  gate: GateSnapshot;
  at: number;
  bucketMs: number;
}

export type Publish = (topic: string, data: unknown, retain: boolean) => void;

interface Watched {
  metrics: AdmissionMetrics;
  name: string;
  /** what was last sent: the config's state, and each gate's version */
  config: string;
  gates: Map<string, number>;
}

/**
 * Pushes each cap-config's gate counts to the editor (RED.comms), at most
 * once a second and only what changed: a gate's message when one of its
 * counts did, the cap-config's when its state did. Every message is retained,
 * so an editor opened later gets the current counts (and the last five
 * minutes) at once; a gate that goes, or a cap-config that closes, clears its
 * topics. Nothing is polled per node: one timer for the runtime, running
 * while any cap-config is watched.
 */
export class AdmissionFeed {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly publish: Publish, private readonly intervalMs = FEED_INTERVAL_MS, private readonly now: () => number = Date.now) {}

  /** Publishes a cap-config's counts from now on; returns what stops it (and clears its topics). */
  watch(id: string, name: string, metrics: AdmissionMetrics): () => void {
    const entry: Watched = { metrics, name, config: "", gates: new Map() };
    this.watched.set(id, entry);
    this.start();
    return () => {
      if (this.watched.get(id) !== entry) return;
      this.watched.delete(id);
      for (const gate of entry.gates.keys()) this.send(`${FEED_TOPIC}/${id}/${gate}`, null, false);
      this.send(`${FEED_TOPIC}/${id}`, null, false);
      if (this.watched.size === 0) this.stop();
    };
  }

  /** One round: what changed since the last one, of every cap-config. */
  flush(): void {
    const at = this.now();
    for (const [id, entry] of this.watched) {
      const config = { ...entry.metrics.configSnapshot(), name: entry.name };
      const state = JSON.stringify(config);
      if (state !== entry.config) {
        entry.config = state;
        this.send(`${FEED_TOPIC}/${id}`, { config, at, bucketMs: BUCKET_MS } satisfies ConfigFeedMessage, true);
      }
      const seen = new Set<string>();
      for (const counts of entry.metrics.gateCounts()) {
        seen.add(counts.id);
        if (entry.gates.get(counts.id) === counts.version) continue;
        entry.gates.set(counts.id, counts.version);
        this.send(`${FEED_TOPIC}/${id}/${counts.id}`, { gate: counts.snapshot(), at, bucketMs: BUCKET_MS } satisfies GateFeedMessage, true);
      }
      for (const gate of entry.gates.keys()) {
        if (seen.has(gate)) continue;
        entry.gates.delete(gate);
        this.send(`${FEED_TOPIC}/${id}/${gate}`, null, false);
      }
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.flush(), this.intervalMs);
    this.timer.unref();
  }

  /** The editor's comms failing must never touch the send path. */
  private send(topic: string, data: unknown, retain: boolean): void {
    try {
      this.publish(topic, data, retain);
    } catch {
      // nothing to do: the next change is sent again
    }
  }
}
