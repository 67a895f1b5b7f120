import type { Node, NodeStatusFill, NodeStatusShape } from "node-red";
import type { FailMode } from "../../core/store/storeAccess";
import type { CapService } from "../../core/capService";
import { ConfigError, SettingError } from "../../core/errors";
import type { RulesProviderState } from "../../core/rules/rulesProvider";
import { englishMessages } from "../../core/schema/catalog";
import type { Translate } from "../../core/schema/messages";
import type { StoreState } from "../../core/store/admissionStore";
import { formatCount, statusLine } from "./statusText";

const REFRESH_MS = 250;
/** how long fail-open verdicts keep the dot yellow after the last one */
const RECENT_FAIL_OPEN_MS = 10_000;

interface Health {
  fill: NodeStatusFill;
  shape: NodeStatusShape;
  /** what is wrong, first in the text; absent when all is well */
  word?: string;
}

/**
 * A gate's node status, as core nodes keep theirs: a short line of counts
 * (`✓ 1,204 · ✗ 37 · held 3`) that never runs under the next node, and a dot
 * whose colour is the store's health: green connected, yellow connecting or
 * failing open, red store down (fail closed), rules unavailable or the node
 * misconfigured. A bad msg is that msg's problem: it goes to Catch and is
 * counted, but never colours the dot. Redrawn at most every 250 ms.
 */
export class GateStatus {
  private readonly counts = { allowed: 0, skipped: 0, failOpen: 0, errors: 0, listChanges: 0, released: 0, recorded: 0, deferred: 0 };
  private held = 0;
  private waiting = 0;
  /** a throughput-gate's current rate: how many it let through, per second */
  private perSecond: (() => number) | undefined;
  /** a throughput-gate's msgs paced in process only (due too soon to be written to the queue), asked at each redraw */
  private inProcess: () => number = () => 0;
  private lastFailOpen = 0;
  private store: StoreState = "ready";
  private rules: RulesProviderState = "ok";
  private failMode: FailMode = "open";
  private timer: NodeJS.Timeout | undefined;
  /** a fixed problem that outranks every count until redeploy */
  private brokenText: string | undefined;

  constructor(private readonly node: Node, private readonly storeLabel: string, private readonly t: Translate = englishMessages()) {}

  allowed(): void { this.counts.allowed++; this.schedule(); }
  skipped(): void { this.counts.skipped++; this.schedule(); }
  failOpen(): void { this.counts.failOpen++; this.lastFailOpen = Date.now(); this.schedule(); }
  /** a msg went to Catch: counted, but the dot stays the store's */
  error(_text?: string): void { this.counts.errors++; this.schedule(); }
  /** a suppress / unsuppress control msg handled */
  listChanged(): void { this.counts.listChanges++; this.schedule(); }
  released(): void { this.counts.released++; this.schedule(); }
  /** a held msg left by the deferred output */
  releasedHeld(): void { this.counts.deferred++; this.schedule(); }
  /** how many msgs this gate holds in its cap-config's defer queue */
  holding(count: number): void { this.held = count; this.schedule(); }
  /** a throughput-gate shows the rate it lets msgs through at (asked at each redraw, which goes on while it holds msgs) */
  showRate(perSecond: () => number): void { this.perSecond = perSecond; this.schedule(); }
  /** held msgs beside those in the defer queue: shown with them */
  alsoHolding(count: () => number): void { this.inProcess = count; this.schedule(); }
  /** how many msgs wait in the cap-config's send queue (shown when > 0) */
  queued(count: number): void { this.waiting = count; this.schedule(); }
  recorded(): void { this.counts.recorded++; this.schedule(); }
  storeState(state: StoreState): void { this.store = state; this.schedule(); }
  rulesState(state: RulesProviderState): void { this.rules = state; this.schedule(); }

  /** Follows the store's and the rules' health; returns what stops following. */
  watch(service: CapService): () => void {
    this.store = service.store.state();
    this.rules = service.rules.state();
    this.failMode = service.settings.failMode;
    const stops = [
      service.store.onStateChange((state) => this.storeState(state)),
      service.rules.onStateChange((state) => this.rulesState(state)),
      service.access.queue?.onLength((length) => this.queued(length)) ?? (() => undefined),
    ];
    this.schedule();
    return () => stops.forEach((stop) => stop());
  }

  /** A fixed problem (no config, a bad setting, an unusable cap-config) that no msg can clear; the full text is logged by the gate. */
  broken(problem: string | Error): void {
    this.brokenText = this.brokenWord(problem);
    this.stop();
    this.node.status({ fill: "red", shape: "ring", text: this.brokenText });
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private brokenWord(problem: string | Error): string {
    if (problem instanceof ConfigError) return this.t("sendgate.status.configInvalid");
    if (problem instanceof SettingError) return statusLine([this.t("sendgate.status.invalid", { field: problem.label })]);
    const text = problem instanceof Error ? problem.message : problem;
    const field = /^([A-Za-z][\w.]*): /.exec(text)?.[1];
    if (field === "config") return this.t("sendgate.status.noConfig");
    if (field !== undefined) return statusLine([this.t("sendgate.status.invalid", { field })]);
    return statusLine([text]);
  }

  private schedule(): void {
    if (this.timer || this.brokenText !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.draw();
    }, REFRESH_MS);
  }

  private health(): Health {
    const t = this.t;
    if (this.store === "down") {
      return this.failMode === "open"
        ? { fill: "yellow", shape: "ring", word: t("sendgate.status.failOpenDown", { store: this.storeLabel }) }
        : { fill: "red", shape: "ring", word: t("sendgate.status.storeDown", { store: this.storeLabel }) };
    }
    if (this.store === "connecting") return { fill: "yellow", shape: "ring", word: t("sendgate.status.connecting") };
    if (this.rules === "unavailable") return { fill: "red", shape: "ring", word: t("sendgate.status.rulesDown") };
    if (this.rules === "stale") return { fill: "yellow", shape: "ring", word: t("sendgate.status.rulesStale") };
    if (Date.now() - this.lastFailOpen < RECENT_FAIL_OPEN_MS) return { fill: "yellow", shape: "dot", word: t("sendgate.status.failOpen") };
    return { fill: "green", shape: "dot" };
  }

  private counted(key: string, count: number): string {
    return this.t(`sendgate.status.${key}`, { count: formatCount(count) });
  }

  private draw(): void {
    const { allowed, skipped, errors, listChanges, released, recorded } = this.counts;
    const health = this.health();
    const parts: string[] = health.word === undefined ? [] : [health.word];
    if (released > 0) parts.push(this.counted("released", released));
    else if (recorded > 0) parts.push(this.counted("recorded", recorded));
    else parts.push(this.counted("allowed", allowed), this.counted("skipped", skipped));
    // the send queue first: msgs waiting for the store say more about its health than msgs held by design
    if (this.waiting > 0) parts.push(this.counted("queued", this.waiting));
    const held = this.held + this.inProcess();
    if (held > 0) parts.push(this.counted("held", held));
    if (this.perSecond) {
      const rate = this.perSecond();
      if (rate > 0 || held > 0) parts.push(this.counted("rate", rate));
      // the rate falls back to 0 a second after the last msg: draw again until it has
      if (rate > 0) this.schedule();
    }
    if (errors > 0) parts.push(this.counted("caught", errors));
    if (listChanges > 0) parts.push(this.counted("listChanges", listChanges));
    this.node.status({ fill: health.fill, shape: health.shape, text: statusLine(parts) });
  }
}
