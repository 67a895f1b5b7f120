import type { AdmissionMetrics, ConfigSnapshot } from "../core/metrics/admissionMetrics";
import { BUCKET_MS, type GateSnapshot } from "../core/metrics/gateCounts";

/** The editor's Admission sidebar subscribes to `sendgate/admission/#`; one topic per cap-config. */
export const FEED_TOPIC = "sendgate/admission";
export const FEED_INTERVAL_MS = 1000;

/** What the sidebar gets for one cap-config: its send path and every gate of it. */
export interface FeedMessage {
  config: ConfigSnapshot & { name: string };
  gates: GateSnapshot[];
  /** the runtime's clock when this was sent, so the editor places the buckets whatever its own clock says */
  at: number;
  bucketMs: number;
}

export type Publish = (topic: string, data: unknown, retain: boolean) => void;

interface Watched {
  metrics: AdmissionMetrics;
  name: string;
  signature: string;
}

/**
 * Pushes each cap-config's gate counts to the editor (RED.comms), at most
 * once a second and only when something changed. Each message is retained,
 * so an editor opened later gets the current counts (and the last five
 * minutes) at once; a cap-config that closes clears its topic. Nothing is
 * polled per node: one timer for the runtime, running while any cap-config is
 * watched.
 */
export class AdmissionFeed {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly publish: Publish, private readonly intervalMs = FEED_INTERVAL_MS, private readonly now: () => number = Date.now) {}

  /** Publishes a cap-config's counts from now on; returns what stops it (and clears its topic). */
  watch(id: string, name: string, metrics: AdmissionMetrics): () => void {
    const entry: Watched = { metrics, name, signature: "" };
    this.watched.set(id, entry);
    this.start();
    return () => {
      if (this.watched.get(id) !== entry) return;
      this.watched.delete(id);
      this.safely(() => this.publish(`${FEED_TOPIC}/${id}`, null, false));
      if (this.watched.size === 0) this.stop();
    };
  }

  /** One round: every cap-config whose counts or state changed since the last one. */
  flush(): void {
    for (const [id, entry] of this.watched) {
      const config = { ...entry.metrics.configSnapshot(), name: entry.name };
      const signature = `${entry.metrics.signature()}|${JSON.stringify(config)}`;
      if (signature === entry.signature) continue;
      entry.signature = signature;
      const message: FeedMessage = { config, gates: entry.metrics.gateSnapshots(), at: this.now(), bucketMs: BUCKET_MS };
      this.safely(() => this.publish(`${FEED_TOPIC}/${id}`, message, true));
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
  private safely(work: () => void): void {
    try {
      work();
    } catch {
      // nothing to do: the next change is sent again
    }
  }
}
