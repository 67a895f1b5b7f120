import type { Node, NodeMessage, NodeMessageInFlow } from "node-red";
import type { CapService } from "../core/capService";
import { OutputOrder } from "../core/outputOrder";
import type { GateStatus } from "./gateStatus";
import { releaseHandler } from "./holding";
import type { AdmittedMsg } from "./refusal";

export type SendFn = (msg: NodeMessage | (NodeMessage | null)[]) => void;
type Done = (err?: Error) => void;

/** What a gate stops on close: a subscription, or work that finishes first (a poller's round). */
export type Cleanup = (() => void | Promise<void>) | undefined;

/** Puts a msg in its recipient's line, once the gate has read whose it is. */
export type LineUp = (recipient: { org: string; recipient: string }) => void;

/**
 * A gate's input and close, the Node-RED way: the handler is declared as
 * (msg, send, done) so the runtime waits for it; a failure goes to done(err),
 * which hands the msg to a Catch node; on close every subscription ends, and
 * the runtime waits for a release in progress to finish.
 * Msgs of one recipient leave in the order they came (lineUp), whatever
 * order the store answers them in.
 */
export function serveGate(node: Node, status: GateStatus, handle: (msg: AdmittedMsg, send: SendFn, lineUp: LineUp) => Promise<void>, cleanups: readonly Cleanup[]): void {
  const order = new OutputOrder();
  node.on("input", (msg: NodeMessageInFlow, send: SendFn, done: Done) => {
    const place = order.place();
    const ordered: SendFn = (out) => place.emit(() => send(out));
    const lineUp: LineUp = (r) => place.join(`${r.org}\u0000${r.recipient}`);
    const finish = (err?: Error): void => {
      if (err) status.error(err.message.slice(0, 60));
      done(err);
    };
    handle(msg as AdmittedMsg, ordered, lineUp).then(
      () => { const later = place.leave(); if (later) void later.then(() => finish()); else finish(); },
      (err: Error) => { const later = place.leave(); if (later) void later.then(() => finish(err)); else finish(err); },
    );
  });
  node.on("close", (_removed: boolean, done: () => void) => {
    Promise.allSettled(cleanups.map((cleanup) => cleanup?.())).then(() => {
      status.stop();
      done();
    }, done);
  });
}

/** A gate that holds msgs releases them by its deferred output (or skipped, expired) and shows how many it holds. */
export function releaseHeldMsgs(service: CapService, node: Node, gate: string, status: GateStatus): Cleanup[] {
  return [
    service.deferrals.register(node.id, releaseHandler(gate, status, (output, msg) => node.send(output === "deferred" ? [null, null, msg] : [null, msg, null]))),
    service.deferrals.onSize(node.id, (held) => status.holding(held)),
  ];
}

/** A seconds property of a gate (deferMax, jitter): absent or blank takes the default, anything else must be a number >= 0. */
export function secondsSetting(field: string, value: unknown, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${field}: must be seconds >= 0, got ${JSON.stringify(value)}`);
  return n;
}
