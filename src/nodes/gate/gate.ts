import type { Node, NodeAPI, NodeMessageInFlow } from "node-red";
import { DRAIN_MS, type CapService } from "../../core/capService";
import type { DeferredMsg } from "../../core/hold/heldQueue";
import type { ReleaseHandler } from "../../core/hold/deferrals";
import type { GateCounts } from "../../core/metrics/gateCounts";
import { OutputOrder } from "../../core/outputOrder";
import { Intake } from "../../core/sendQueue/intake";
import { withTimeout } from "../../core/store/withTimeout";
import type { CapConfigNode } from "./capConfigNode";
import { GateStatus } from "./status";
import { releaseHandler } from "./holding";
import { runtimeMessages } from "./i18n";
import { parkedOutput, parkedWhose, parkInQueue, releaseParked, type Whose } from "./parking";
import type { AdmittedMsg } from "./refusal";
import { GateOutlet } from "./outlet";
import type { ReceiveHooks } from "./transit";
import type { Outputs } from "./outputs";
import { MsgTurn, type Done, type Turn, type TurnShared } from "./turn";
import { VerdictLog } from "./verdictLog";

export type { Turn } from "./turn";

/** What a gate stops on close: a subscription, or work that finishes first (a poller's round). */
export type Cleanup = (() => void | Promise<void>) | undefined;

/** What kind of gate it is, for the lifecycle every gate shares. */
export interface GateKind<S> {
  /** the node type (the metrics' and the trail's gate name) */
  type: string;
  /** what it needs its cap-config for, said when none is selected */
  needsConfig: string;
  /** its own settings, read at deploy; throws naming the property of a bad one */
  settings: () => S;
  /** its verdicts hold however late they leave (a record of a send that happened): what it parks never goes stale */
  lasts?: boolean;
}

/** Judges one msg; the promise settles when the msg is done (rejected: to Catch), or none when the handler ends the turn itself. */
export type Handler<S> = (msg: AdmittedMsg, turn: Turn, service: CapService, settings: S) => Promise<void> | undefined;

export interface ServeOptions {
  /**
   * the gate's own way to let out what its queue hands it (a throughput-gate
   * paces); by default a held msg leaves by deferred, or by skipped past its
   * deadline. A msg it parked as it closed is let out here, before this.
   */
  release?: ReleaseHandler;
  releaseTiming?: { minSleepMs?: number; steady?: boolean };
  /** more to stop on close, after the releases stopped and before the store closes */
  cleanups?: readonly Cleanup[];
  /** its msgs leave with no verdict worth a recipient's history (a check's answer) */
  noVerdicts?: boolean;
}

/**
 * The one lifecycle of every gate: it takes msgs in (at most MAX_ACTIVE begun
 * at once, the rest waiting in arrival order, counted towards the
 * cap-config's maxQueued), judges each in its turn (msgs of one recipient
 * leave in the order they came), sends them through one outlet (counted by
 * output; routed, and parked where a stopped node would drop them, once its
 * close has begun), holds and lets out held and parked msgs from its durable
 * queue, and closes: the msgs it took in finish, what it judges meanwhile is
 * parked for its next deployment, and only then may its store close.
 * A gate adds its handler and, if it paces msgs itself, its own release.
 */
export class Gate<S> {
  readonly config: CapConfigNode | null;
  readonly service: CapService | undefined;
  readonly settings: S | undefined;
  /** what stops the gate (its own bad setting, no cap-config, the cap-config's problem): every msg goes to Catch with it */
  readonly problem: Error | undefined;
  readonly status: GateStatus;
  readonly counts: GateCounts | undefined;
  private readonly outlet: GateOutlet;

  constructor(private readonly RED: NodeAPI, readonly node: Node, configId: string | undefined, readonly kind: GateKind<S>) {
    this.config = RED.nodes.getNode(configId ?? "") as CapConfigNode | null; // eslint-disable-line @typescript-eslint/no-unnecessary-type-assertion -- getNode is typed Node; the cap-config node is ours
    this.service = this.config?.service;
    this.status = new GateStatus(node, this.service?.store.kind ?? "store", runtimeMessages(RED));
    this.counts = this.service?.metrics.gate(node.id, kind.type);
    let settings: S | undefined;
    let problem: Error | undefined;
    try {
      settings = kind.settings();
    } catch (err) {
      problem = err as Error;
    }
    if (!this.config) problem = new Error(`config: no cap-config selected (${kind.needsConfig})`);
    else if (this.config.problem) problem = this.config.problem;
    if (problem) {
      // a cap-config's own problem is already logged by it; a gate logs its own
      if (problem !== this.config?.problem) node.error(problem.message);
      this.status.broken(problem);
    }
    this.settings = settings;
    this.problem = problem;
    const running = this.service !== undefined && !problem;
    this.outlet = new GateOutlet(node, this.counts,
      running ? parkInQueue((this.service).deferrals, node.id, kind.lasts) : undefined,
      // undefined, not null, for a node stopped in a flow that goes on running (a modified-nodes deploy)
      (id) => RED.nodes.getNode(id) != null,
      (RED as { hooks?: ReceiveHooks }).hooks);
  }

  /** Sends what the gate lets out on its own (a held msg at its time): counted, and parked if it would be lost as the gate closes. */
  emit(out: Outputs, whose?: Whose): void | Promise<void> {
    return this.outlet.send(out, whose);
  }

  /** set from the first moment of close */
  isClosing(): boolean {
    return this.outlet.isClosing;
  }

  /** a msg sent by output `index` now would be parked (the gate closes, and a node after it has stopped) */
  wouldPark(index: number): boolean {
    return this.outlet.wouldPark(index);
  }

  /** keeps close waiting for work that may still send (a release that first gives back claims) */
  track(work: Promise<unknown>): void {
    this.outlet.track(work);
  }

  /**
   * Starts taking msgs in: the input handler is declared as (msg, send, done)
   * so the runtime waits for each; a msg whose handler fails goes to Catch
   * (done(err)); the close handler as (removed, done), so the runtime waits
   * for the gate's last msgs before the flow starts again.
   */
  serve(handle: Handler<S>, options: ServeOptions = {}): void {
    const { node, service, status, counts, outlet } = this;
    const order = new OutputOrder();
    const working = service !== undefined && this.problem === undefined ? service : undefined;
    const verdicts = working?.history.enabled && !options.noVerdicts ? new VerdictLog(working, node.id, this.kind.type) : undefined;
    const shared: TurnShared = { outlet, counts, status, leave: () => intake.leave(), verdicts };
    const settings = this.settings as S;
    const intake = new Intake<NodeMessageInFlow, Done>((msg, done) => {
      const turn = new MsgTurn(shared, order.place(), msg, done);
      let handled: Promise<void> | undefined;
      try {
        handled = working ? handle(msg, turn, working, settings) : Promise.reject(this.problem ?? new Error("cap-config: its store is closed"));
      } catch (err) {
        // a handler that threw before its first await still ends its msg's turn (to Catch), or the intake would wait for it
        handled = Promise.reject(err);
      }
      // no promise: the handler ends the turn itself
      handled?.then(() => turn.end(), (err: Error) => turn.end(err));
    }, service?.access.queue);
    const cleanups: Cleanup[] = [];
    if (service) cleanups.push(status.watch(service));
    if (working) cleanups.push(...this.releases(working, options), ...(options.cleanups ?? []));
    // declared (msg, send, done) so the runtime waits for done; its send is the node's own, which the outlet uses
    node.on("input", (msg: NodeMessageInFlow, _send: unknown, done: Done) => intake.enter(msg, done));
    node.on("close", (removed: boolean, done: () => void) => {
      outlet.begin(removed);
      intake.flush();
      if (removed) service?.metrics.forget(node.id);
      // releasing stops at once; held and paced msgs stay in (or go back to) the durable queue for the next deployment
      const cleaned = Promise.allSettled(cleanups.map((cleanup) => Promise.resolve(cleanup?.())));
      // the msgs begun finish before the store closes, and the cleanups (which may still write to it), then what was parked;
      // msgs on their way into this gate as the flow stopped still arrive and are judged (and parked) first
      const drained = outlet.inTransitDelivered().then(() => withTimeout(intake.idle(), DRAIN_MS, undefined));
      const closed = Promise.all([drained, cleaned]).then(() => outlet.settled());
      service?.drainBeforeClose(closed);
      closed.then(() => {
        status.stop();
        done();
      }, done);
    });
  }

  /** The gate lets out what its queue hands it (held, or parked as it closed last time), and shows how many it holds. */
  private releases(service: CapService, options: ServeOptions): Cleanup[] {
    const { node, status, counts } = this;
    const own = options.release ?? releaseHandler(this.kind.type, status,
      (output, msg) => void this.outlet.send(output === "deferred" ? [null, null, msg] : [null, msg, null]));
    const handler = (held: DeferredMsg): void | Promise<void | "kept"> => {
      const parked = parkedOutput(held);
      if (!parked) return own(held);
      // judged as it closed last time: it leaves as it was judged while that holds, parked again should this deployment close too
      return releaseParked({ RED: this.RED, node, gate: this.kind.type }, held, parked, (out) => this.outlet.send(out, parkedWhose(held)));
    };
    return [
      service.deferrals.register(node.id, handler, options.releaseTiming),
      service.deferrals.onSize(node.id, (size, nextDueAt) => {
        status.holding(size);
        counts?.holding(size, nextDueAt);
      }),
    ];
  }
}
