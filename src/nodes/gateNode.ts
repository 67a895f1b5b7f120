import type { Node, NodeAPI, NodeMessage, NodeMessageInFlow } from "node-red";
import { DRAIN_MS, type CapService } from "../core/capService";
import type { GateCounts } from "../core/metrics/gateCounts";
import { OutputOrder } from "../core/outputOrder";
import { Intake, type Backlog } from "../core/sendQueue/intake";
import { withTimeout } from "../core/withTimeout";
import type { GateStatus } from "./gateStatus";
import { releaseHandler } from "./holding";
import { ClosingOutputs } from "./closingOutputs";
import { parkedOutput, parkInQueue, releaseParked, type Park, type Whose } from "./parking";
import type { AdmittedMsg } from "./refusal";
import { countOutputs, MsgTurn, type Done, type SendFn, type Turn, type TurnShared } from "./gateTurn";

export type { SendFn, Turn } from "./gateTurn";

/** What a gate stops on close: a subscription, or work that finishes first (a poller's round). */
export type Cleanup = (() => void | Promise<void>) | undefined;

/** A send function that counts each msg by the output it leaves (allowed, skipped, deferred) before it goes. */
export function countingSend(send: SendFn, counts: GateCounts | undefined): SendFn {
  if (!counts) return send;
  return (out) => {
    countOutputs(counts, out);
    send(out);
  };
}

/** Puts a msg in its recipient's line, once the gate has read whose it is (and when it expires, should it be parked). */
export type LineUp = (whose: Whose) => void;

/** The parts of a gate serveGate works with beside its handler; all optional (a gate with no cap-config has none). */
export interface GateServing {
  metrics?: { counts: GateCounts; forget: () => void };
  /** the cap-config's send queue: a burst waiting in the intake counts towards maxQueued */
  backlog?: Backlog;
  drains?: Pick<CapService, "drainBeforeClose">;
  /** where the gate keeps what it judges as it closes, for its next deployment (ClosingOutputs); without it, sent all the same */
  park?: Park;
  /** whether a node is running (RED.nodes.getNode): what is sent to a stopped one is dropped */
  running?: (id: string) => boolean;
}

/** What serveGate gives back to its gate. */
export interface ServedGate {
  /** set from the first moment of close, before the intake's last msgs run through the handler */
  isClosing(): boolean;
  /** a msg sent by output `index` now would be parked (the gate closes, and a node after it has stopped) */
  wouldPark(index: number): boolean;
  /** sends what the gate releases on its own: counted by output, or parked as it closes (the promise of the park) */
  emit(out: NodeMessage | (NodeMessage | null)[], whose?: Whose): void | Promise<void>;
  /** keeps close waiting for work that may still send (a release that first gives back claims) */
  track(work: Promise<unknown>): void;
}

/**
 * A gate's input and close, the Node-RED way: the handler is declared as
 * (msg, send, done) so the runtime waits for it; a failure goes to done(err),
 * which hands the msg to a Catch node; on close every subscription ends, and
 * the runtime waits for a release in progress to finish.
 * Each msg comes with its Turn: msgs of one recipient leave in the order they
 * came (turn.lineUp), whatever order the store answers them in; the turn ends
 * when the handler's promise settles, or, when it returns none, when it calls
 * turn.end. With
 * `metrics`, every msg is counted by the output it leaves and every msg sent
 * to Catch by why (the metrics and the editor's sidebar); a gate removed from
 * the flows takes its counts with it.
 * A burst waits in the gate's intake (at most MAX_ACTIVE msgs are begun at
 * once), counted in the cap-config's send queue (`backlog`) towards maxQueued.
 * What the gate judges once its close has begun goes through ClosingOutputs:
 * parked when the nodes after it have stopped.
 */
export function serveGate(
  node: Node, status: GateStatus, handle: (msg: AdmittedMsg, turn: Turn) => Promise<void> | undefined, cleanups: readonly Cleanup[],
  serving: GateServing = {},
): ServedGate {
  const { metrics, backlog, drains } = serving;
  const closing = new ClosingOutputs(node, serving.park, serving.running ?? (() => true));
  const countedOwn = countingSend((out) => node.send(out), metrics?.counts);
  const order = new OutputOrder();
  const shared: TurnShared = { closing, counts: metrics?.counts, status, leave: () => intake.leave() };
  const intake = new Intake<NodeMessageInFlow, SendFn, Done>((msg, send, done) => {
    const turn = new MsgTurn(shared, order.place(), send, done);
    let handled: Promise<void> | undefined;
    try {
      handled = handle(msg as AdmittedMsg, turn);
    } catch (err) {
      // a handler that threw before its first await still ends its msg's turn (to Catch), or the intake would wait for
      // it; not at once, down the stack of the msg that begins this one
      handled = Promise.reject(err as Error);
    }
    // no promise: the handler ends the turn itself
    handled?.then(() => turn.end(), (err: Error) => turn.end(err));
  }, backlog);
  node.on("input", (msg: NodeMessageInFlow, send: SendFn, done: Done) => intake.enter(msg, send, done));
  node.on("close", (removed: boolean, done: () => void) => {
    closing.begin(removed);
    intake.flush();
    if (removed) metrics?.forget();
    // Releasing stops at once: Node-RED stops the nodes wired after this one now, and a msg sent to them is dropped.
    // Held and paced msgs stay in (or go back to) the durable queue for the next deployment's poller.
    const cleaned = Promise.allSettled(cleanups.map((cleanup) => cleanup?.()));
    // the msgs begun (those of a burst still in the intake too) finish before the store closes: none is left half-done;
    // so do the cleanups, which may still write to the store (a throughput-gate hands its paced msgs back to the queue),
    // and then the msgs parked meanwhile
    const closed = Promise.all([withTimeout(intake.idle(), DRAIN_MS, undefined), cleaned]).then(() => closing.settled());
    drains?.drainBeforeClose(closed);
    closed.then(() => {
      status.stop();
      done();
    }, done);
  });
  return {
    isClosing: () => closing.isClosing,
    wouldPark: (index) => closing.wouldPark(index),
    emit: (out, whose) => closing.send(out, countedOwn, whose),
    track: (work) => closing.track(work),
  };
}

/** A gate's counts in its cap-config's metrics, and how to drop them when the gate is removed. */
export function gateMetrics(service: CapService | undefined, id: string, gate: string): { counts: GateCounts; forget: () => void } | undefined {
  if (!service) return undefined;
  return { counts: service.metrics.gate(id, gate), forget: () => service.metrics.forget(id) };
}

/** A gate that holds msgs releases them by its deferred output (or skipped, expired) and shows how many it holds; it lets out what it parked too. */
export function releaseHeldMsgs(RED: NodeAPI, service: CapService, node: Node, gate: string, status: GateStatus): Cleanup[] {
  const counts = service.metrics.gate(node.id, gate);
  const send = countingSend((out) => node.send(out), counts);
  const held = releaseHandler(gate, status, (output, msg) => send(output === "deferred" ? [null, null, msg] : [null, msg, null]));
  return [
    service.deferrals.register(node.id, (entry) => {
      const parked = parkedOutput(entry);
      return parked ? releaseParked({ RED, node, gate }, entry, parked, send) : held(entry);
    }),
    service.deferrals.onSize(node.id, (size) => {
      status.holding(size);
      counts.holding(size);
    }),
  ];
}

/**
 * What a gate whose cap-config runs needs to park what it judges as it closes
 * (serveGate), and to tell a stopped node. `lasts`: its verdicts hold however
 * late they leave (a record of a send that happened).
 */
export function parkingFor(RED: NodeAPI, node: Node, service: CapService | undefined, problem: unknown, lasts = false): Pick<GateServing, "park" | "running"> {
  if (!service || problem) return {};
  // undefined, not null, for a node stopped in a flow that goes on running (a partial deploy that modified it too)
  return { park: parkInQueue(service.deferrals, node.id, lasts), running: (id) => RED.nodes.getNode(id) != null };
}

/** A seconds property of a gate (deferMax, jitter): absent or blank takes the default, anything else must be a number >= 0. */
export function secondsSetting(field: string, value: unknown, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${field}: must be seconds >= 0, got ${JSON.stringify(value)}`);
  return n;
}

/**
 * A holding gate's settings, read at deploy, and what stops it from running:
 * its own bad setting (logged here, naming the property), no cap-config
 * (`needsConfig` says what for), or the cap-config's own problem (already
 * logged by the cap-config). A problem shows on the status.
 */
export function gateSettings<S>(node: Node, status: GateStatus, config: { problem?: Error } | null, needsConfig: string, read: () => S): { settings?: S; problem?: Error } {
  let settings: S | undefined;
  let problem: Error | undefined;
  try {
    settings = read();
  } catch (err) {
    problem = err as Error;
  }
  if (!config) problem = new Error(`config: no cap-config selected (${needsConfig})`);
  else if (config.problem) problem = config.problem;
  if (problem) {
    if (problem !== config?.problem) node.error(problem.message);
    status.broken(problem);
  }
  return { ...(settings !== undefined ? { settings } : {}), ...(problem ? { problem } : {}) };
}
