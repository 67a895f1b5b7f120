import type { Node, NodeStatusFill, NodeStatusShape } from "node-red";
import type { CapService } from "../core/capService";
import type { RulesProviderState } from "../core/rulesProvider";
import type { StoreState } from "../core/stores/admissionStore";

const REFRESH_MS = 250;
const RECENT_MS = 10_000;

/**
 * A gate's node status: what it counted and how its store is, redrawn at most
 * every 250 ms so a busy gate does not flood the editor.
 */
export class GateStatus {
  private readonly counts = { allowed: 0, skipped: 0, failOpen: 0, errors: 0, listChanges: 0, released: 0, recorded: 0, deferred: 0 };
  private held = 0;
  private queuedNow = 0;
  private lastFailOpen = 0;
  private lastError = "";
  private lastErrorAt = 0;
  private store: StoreState = "ready";
  private rules: RulesProviderState = "ok";
  private timer: NodeJS.Timeout | undefined;
  /** a fixed problem that outranks every count until redeploy */
  private brokenText: string | undefined;

  constructor(private readonly node: Node, private readonly storeLabel: string) {}

  allowed(): void { this.counts.allowed++; this.schedule(); }
  skipped(): void { this.counts.skipped++; this.schedule(); }
  failOpen(): void { this.counts.failOpen++; this.lastFailOpen = Date.now(); this.schedule(); }
  error(text: string): void { this.counts.errors++; this.lastError = text; this.lastErrorAt = Date.now(); this.schedule(); }
  /** a suppress / unsuppress control msg handled */
  listChanged(): void { this.counts.listChanges++; this.schedule(); }
  released(): void { this.counts.released++; this.schedule(); }
  /** a held msg left by the deferred output */
  releasedHeld(): void { this.counts.deferred++; this.schedule(); }
  /** how many msgs the cap-config's queue holds */
  holding(count: number): void { this.held = count; this.schedule(); }
  recorded(): void { this.counts.recorded++; this.schedule(); }
  /** how many msgs wait in the cap-config's send queue */
  queued(count: number): void { this.queuedNow = count; this.schedule(); }
  storeState(state: StoreState): void { this.store = state; this.schedule(); }
  rulesState(state: RulesProviderState): void { this.rules = state; this.schedule(); }

  /** Follows the store's and the rules' health; returns what stops following. */
  watch(service: CapService): () => void {
    this.store = service.store.state();
    this.rules = service.rules.state();
    const stops = [
      service.store.onStateChange((state) => this.storeState(state)),
      service.rules.onStateChange((state) => this.rulesState(state)),
      service.access.queue?.onLength((length) => this.queued(length)) ?? (() => undefined),
    ];
    this.schedule();
    return () => stops.forEach((stop) => stop());
  }

  /** A fixed problem (bad config) that no msg can clear. */
  broken(text: string): void {
    this.brokenText = text;
    this.stop();
    this.node.status({ fill: "red", shape: "ring", text });
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.timer || this.brokenText !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.draw();
    }, REFRESH_MS);
  }

  private draw(): void {
    const now = Date.now();
    const { allowed, skipped, failOpen, errors, listChanges, released, recorded } = this.counts;
    const parts = released > 0 || recorded > 0
      ? [released > 0 ? `released ${released}` : `recorded ${recorded}`]
      : [`allowed ${allowed}`, `skipped ${skipped}`];
    if (listChanges > 0) parts.push(`list changes ${listChanges}`);
    if (this.counts.deferred > 0) parts.push(`deferred ${this.counts.deferred}`);
    if (this.held > 0) parts.push(`held ${this.held}`);
    if (this.queuedNow > 0) parts.push(`${this.queuedNow.toLocaleString("en-US")} queued`);
    if (failOpen > 0) parts.push(`fail-open ${failOpen}`);
    if (errors > 0) parts.push(`errors ${errors}`);
    let fill: NodeStatusFill = "green";
    let shape: NodeStatusShape = "dot";
    if (this.store !== "ready") {
      parts.push(`${this.storeLabel} ${this.store}`);
      fill = this.store === "down" ? "red" : "yellow";
      shape = "ring";
    } else if (this.rules !== "ok") {
      parts.push(this.rules === "stale" ? "rules db down: last rules serve" : "rules unavailable");
      fill = this.rules === "stale" ? "yellow" : "red";
      shape = "ring";
    } else if (now - this.lastFailOpen < RECENT_MS) {
      fill = "yellow";
    } else if (now - this.lastErrorAt < RECENT_MS) {
      fill = "red";
      parts.push(`last error: ${this.lastError}`);
    }
    this.node.status({ fill, shape, text: parts.join(" · ") });
  }
}
