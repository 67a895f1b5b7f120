import type { Node, NodeMessage } from "node-red";
import { GATE_OUTPUTS } from "../core/metrics/labels";
import { onOutput, type Park, type ParkedItem, type Whose } from "./parking";

/**
 * What a gate sends once it has begun to close. It parks a msg whose output
 * leads to a node that has stopped (a full deploy), and sends the rest as
 * usual: in a partial deploy the nodes after it still run and take it. A gate
 * that is removed parks nothing: it would never run again to let it out.
 */
export class ClosingOutputs {
  private closing = false;
  private parks = false;
  private readonly pending = new Set<Promise<unknown>>();
  private failed = 0;

  constructor(
    private readonly node: Node,
    private readonly park: Park | undefined,
    /** whether a node is running (RED.nodes.getNode): Node-RED drops what a stopped one is sent */
    private readonly running: (id: string) => boolean,
  ) {}

  begin(removed: boolean): void {
    this.closing = true;
    this.parks = !removed && this.park !== undefined;
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /** A msg sent by output `index` now would be parked: the gate closes, and a node wired to it has stopped. */
  wouldPark(index: number): boolean {
    if (!this.parks) return false;
    const wires = (this.node as Node & { wires?: string[][] }).wires?.[index] ?? [];
    return wires.some((id) => !this.running(id));
  }

  /** Sends `out` now (by `sendNow`), or what of it would be lost, parked; the promise of the park, when there is one. */
  send(out: NodeMessage | (NodeMessage | null)[], sendNow: (out: NodeMessage | (NodeMessage | null)[]) => void, whose?: Whose): void | Promise<void> {
    if (!this.closing || !this.parks) {
      sendNow(out);
      return;
    }
    const byOutput = Array.isArray(out) ? out : [out];
    const parked: ParkedItem[] = [];
    const now = byOutput.map((msg, i) => {
      const output = GATE_OUTPUTS[i];
      if (!msg || !output || !this.wouldPark(i)) return msg;
      parked.push({ msg, output, ...(whose ? { whose } : {}) });
      return null;
    });
    if (now.some((msg) => msg)) sendNow(Array.isArray(out) ? now : (now[0] as NodeMessage));
    if (parked.length === 0) return;
    const parking = (this.park as Park)(parked).catch((err: Error) => {
      // a msg the store would not keep goes out all the same: lost in a full deploy, as it was before parking
      if (this.failed === 0) this.node.error(`closed and could not keep msgs for the next deployment (${err.message}): sent to the stopping flow instead`);
      this.failed += parked.length;
      for (const item of parked) sendNow(onOutput(item.output, item.msg));
    });
    this.track(parking);
    return parking;
  }

  /** Close waits for this work before the store closes: it may still send or park. */
  track(work: Promise<unknown>): void {
    const settled = work.then(() => undefined, () => undefined);
    this.pending.add(settled);
    void settled.then(() => this.pending.delete(settled));
  }

  /** Resolves once every tracked work is done (work tracked meanwhile too). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
    if (this.failed > 1) this.node.error(`closed and could not keep ${this.failed} msgs for the next deployment: sent to the stopping flow`);
  }
}
