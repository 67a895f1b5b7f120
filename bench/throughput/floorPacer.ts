import type { Node, NodeAPI, NodeDef, NodeMessage } from "node-red";
import { preciseNow } from "../../src/core/throughput/storeClock";

/** The bench's reference pacer: its type, loaded into the bench's Node-RED only. */
export const FLOOR_PACER = "bench-floor-pacer";

/**
 * What pacing costs in this Node-RED on this box with nothing else to do: the
 * same GCRA (burst 1) in process memory, no store, no durable hold, no order,
 * metrics or status, one timer, each msg out at its instant with its
 * `release_at` as the gate writes it. Its lateness is the floor the
 * throughput-gate's is measured against in the same run (the event loop's
 * turns, the garbage collector's pauses, the runtime's own delivery), as raw
 * EVALSHA is the floor of a claim.
 */
export default function register(RED: NodeAPI): void {
  function FloorPacer(this: Node, def: NodeDef & { rate?: number }): void {
    RED.nodes.createNode(this, def);
    const node = this;
    const emissionMs = 1000 / Number(def.rate ?? 1000);
    let tat = 0;
    /** held msgs in instant order (instants only grow: a FIFO) */
    const held: { dueAt: number; msg: NodeMessage }[] = [];
    let head = 0;
    let timer: NodeJS.Timeout | undefined;

    const leave = (msg: NodeMessage, dueAt?: number): void => {
      (msg as NodeMessage & { admission?: object }).admission = dueAt === undefined
        ? { status: "allowed" }
        : { status: "allowed", release_at: new Date(dueAt).toISOString() };
      node.send(msg);
    };
    const releaseDue = (): void => {
      timer = undefined;
      const now = preciseNow();
      while (head < held.length && (held[head] as { dueAt: number }).dueAt <= now) {
        const due = held[head++];
        leave(due.msg, due.dueAt);
      }
      if (head === held.length) {
        held.length = 0;
        head = 0;
      } else {
        timer = setTimeout(releaseDue, Math.max(0, (held[head] as { dueAt: number }).dueAt - preciseNow()));
      }
    };

    node.on("input", (msg: NodeMessage, _send: unknown, done: () => void) => {
      const now = preciseNow();
      const reserved = Math.max(now, tat);
      tat = reserved + emissionMs;
      // held to the whole ms after its instant, as the gate holds (release_at is whole ms, never before the instant)
      const dueAt = Math.ceil(reserved);
      if (reserved <= now) leave(msg);
      else {
        held.push({ dueAt, msg });
        if (timer === undefined) timer = setTimeout(releaseDue, dueAt - now);
      }
      // as the gate does: held msgs due by now leave in turn with the incoming ones
      if (timer !== undefined && head < held.length && (held[head] as { dueAt: number }).dueAt <= preciseNow()) {
        clearTimeout(timer);
        releaseDue();
      }
      done();
    });
    node.on("close", () => {
      if (timer !== undefined) clearTimeout(timer);
    });
  }
  RED.nodes.registerType(FLOOR_PACER, FloorPacer);
}
