import type { Node, NodeMessage } from "node-red";
import type { GateCounts } from "../../core/metrics/gateCounts";
import { GATE_OUTPUTS } from "../../core/metrics/labels";
import { countOutputs, type Outputs } from "./outputs";
import { onOutput, type Park, type ParkedItem, type Whose } from "./parking";
import { InTransit, type LostInTransit, type ReceiveHooks } from "./transit";

interface Waiting {
  out: Outputs;
  whose: Whose | undefined;
  sendNow: (out: Outputs) => void;
  settle: (routed: void | Promise<void>) => void;
}

/**
 * The one way a gate's msgs leave it, whatever sent them (a verdict, a held
 * msg let out, a parked one): counted by output, then sent. Once the gate's
 * close has begun, a msg whose output leads to a node that has stopped (a
 * full deploy, a stop of Node-RED, a modified-nodes deploy that changed that
 * node) is parked in the gate's durable queue, to leave by the same output
 * from its next deployment; the rest go out as usual (in a partial deploy the
 * nodes after it run on). A gate that is removed parks nothing: it would never
 * run again to let it out.
 *
 * Node-RED stops a flow's nodes one after another in one synchronous loop,
 * so during it a node after the gate may still look running and stop a moment
 * later, dropping what it was sent. Whatever a gate sends once its close has
 * begun is therefore routed only once that loop is over (a microtask later),
 * when which nodes stopped is known.
 */
export class GateOutlet {
  private closing = false;
  private parks = false;
  /** set once the close began and the stop loop it came from is over */
  private routable = true;
  private waiting: Waiting[] = [];
  private readonly pending = new Set<Promise<unknown>>();
  /** msgs it could not park as it closed, and the first reason why: said once, when the close is over */
  private failed = 0;
  private failure = "";
  /** what it sent in the last turns of the loop, which a deploy may drop before it is delivered (none: it cannot park) */
  private readonly transit: InTransit | undefined;
  /** resolves once what was in transit as the close began has been delivered */
  private delivered: Promise<void> = Promise.resolve();

  constructor(
    private readonly node: Node,
    private readonly counts: GateCounts | undefined,
    private readonly park: Park | undefined,
    /** whether a node is running (RED.nodes.getNode): Node-RED drops what a stopped one is sent */
    private readonly running: (id: string) => boolean,
    private readonly hooks?: ReceiveHooks,
  ) {
    this.transit = park ? new InTransit(() => this.wires()) : undefined;
  }

  /** The gate's close has begun (`removed`: it is taken out of the flows for good). */
  begin(removed: boolean): void {
    this.closing = true;
    this.parks = !removed && this.park !== undefined;
    this.routable = false;
    if (this.parks && this.transit) this.delivered = this.transit.watch(this.hooks, (item) => this.keepLost(item));
    queueMicrotask(() => {
      this.routable = true;
      const waiting = this.waiting;
      this.waiting = [];
      for (const w of waiting) w.settle(this.route(w.out, w.sendNow, w.whose));
    });
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /**
   * A msg sent by output `index` now would be parked: the gate closes, and a
   * node wired to it has stopped (or may have: the stop loop is not over).
   */
  wouldPark(index: number): boolean {
    if (!this.parks) return false;
    if (!this.routable) return true;
    return this.stopped(index);
  }

  /** Sends `out` from the gate: at once while it runs; as it closes, what would be lost is parked (the promise of that). */
  send(out: Outputs, whose?: Whose): void | Promise<void> {
    if (this.closing) return this.sendClosing(out, whose);
    // the common path: no function made per msg
    if (this.counts) countOutputs(this.counts, out);
    this.node.send(out);
    this.transit?.sent(out, whose);
  }

  /** Sends what is no verdict (an HTTP request's answer) as it is: neither counted, nor kept when a stopped node would drop it. */
  answer(out: Outputs): void {
    this.node.send(out);
  }

  private sendClosing(out: Outputs, whose: Whose | undefined): void | Promise<void> {
    const counts = this.counts;
    const sendNow = (now: Outputs): void => {
      if (counts) countOutputs(counts, now);
      this.node.send(now);
    };
    if (this.routable) return this.route(out, sendNow, whose);
    const routed = new Promise<void>((resolve) => {
      this.waiting.push({ out, whose, sendNow, settle: (parking) => (parking ? void parking.then(resolve) : resolve()) });
    });
    this.track(routed);
    return routed;
  }

  /** Close waits for this work before the store closes: it may still send or park. */
  track(work: Promise<unknown>): void {
    const settled = work.then(() => undefined, () => undefined);
    this.pending.add(settled);
    void settled.then(() => this.pending.delete(settled));
  }

  /**
   * Resolves once what was in transit as the close began has been delivered
   * (or kept, where a stopped node dropped it): msgs still on their way into
   * this gate arrive by then too.
   */
  inTransitDelivered(): Promise<void> {
    return this.delivered;
  }

  /** Resolves once every tracked work is done (work tracked meanwhile too), the msgs sent as the close began among them. */
  async settled(): Promise<void> {
    await this.delivered;
    while (this.pending.size > 0) await Promise.all([...this.pending]);
    if (this.failed > 0) this.node.error(`closed and could not keep ${this.failed} msg(s) for the next deployment (${this.failure}): they are lost`);
  }

  private wires(): readonly (readonly string[])[] {
    return (this.node as Node & { wires?: string[][] }).wires ?? [];
  }

  private stopped(index: number): boolean {
    return (this.wires()[index] ?? []).some((id) => !this.running(id));
  }

  /** A msg sent before the close that a stopped node dropped on delivery: kept for the next deployment. */
  private keepLost(item: LostInTransit): void {
    const output = GATE_OUTPUTS[item.output];
    if (!output) return;
    void this.parkItems([{ msg: item.msg, output, ...(item.whose ? { whose: item.whose } : {}) }], () => undefined);
  }

  private route(out: Outputs, sendNow: (out: Outputs) => void, whose: Whose | undefined): void | Promise<void> {
    if (!this.parks) {
      sendNow(out);
      return;
    }
    const byOutput = Array.isArray(out) ? out : [out];
    const parked: ParkedItem[] = [];
    const now = byOutput.map((msg, i) => {
      const output = GATE_OUTPUTS[i];
      if (!msg || !output || !this.stopped(i)) return msg;
      parked.push({ msg, output, ...(whose ? { whose } : {}) });
      return null;
    });
    if (now.some((msg) => msg)) sendNow(Array.isArray(out) ? now : (now[0] as NodeMessage));
    if (parked.length === 0) return;
    return this.parkItems(parked, sendNow);
  }

  /** Parks `parked`; what the store would not keep goes out by `sendNow` all the same. */
  private parkItems(parked: ParkedItem[], sendNow: (out: Outputs) => void): Promise<void> {
    const parking = (this.park as Park)(parked).catch((err: Error) => {
      // a msg the store would not keep goes out all the same: lost in a full deploy, as it would be without parking
      if (this.failed === 0) this.failure = err.message;
      this.failed += parked.length;
      for (const item of parked) sendNow(onOutput(item.output, item.msg));
    });
    this.track(parking);
    return parking;
  }
}
