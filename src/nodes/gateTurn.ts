import type { NodeMessage } from "node-red";
import type { Admission } from "../core/admission";
import { GATE_OUTPUTS } from "../core/metrics/labels";
import type { Place } from "../core/outputOrder";
import type { GateCounts } from "../core/metrics/gateCounts";
import type { ClosingOutputs } from "./closingOutputs";
import type { GateStatus } from "./gateStatus";
import type { Whose } from "./parking";

export type Outputs = NodeMessage | (NodeMessage | null)[];
export type SendFn = (msg: Outputs) => void;
export type Done = (err?: Error) => void;

/** What a gate's handler is given with each msg: how the msg leaves, in its recipient's order. */
export interface Turn {
  /** sends the msg out (by output) as soon as the msgs of its recipient that came before it have left */
  send(out: Outputs): void;
  /** puts the msg in its recipient's line, once the gate has read whose it is */
  lineUp(whose: Whose): void;
  /**
   * the msg is done (with `err`, it goes to Catch): for a handler that
   * returned no promise, which must call it exactly once; serveGate calls it
   * for the others, when their promise settles
   */
  end(err?: Error): void;
}

/** What every msg's turn at one gate shares. */
export interface TurnShared {
  closing: ClosingOutputs;
  counts: GateCounts | undefined;
  status: GateStatus;
  /** the gate's intake, told when a msg is done so the next one in line begins */
  leave(): void;
}

/**
 * One msg's passage through a gate (serveGate): one object a msg, its
 * methods on the prototype. A burst's msgs each had half a dozen closures
 * here (send, line-up, finish and the functions they made), and every one of
 * them outlived its msg's store call, so the garbage collector copied them.
 */
export class MsgTurn implements Turn {
  private whose: Whose | undefined;

  constructor(
    private readonly shared: TurnShared,
    private readonly place: Place,
    /** the runtime's send and done for this msg */
    private readonly nodeSend: SendFn,
    private readonly done: Done,
  ) {}

  send(out: Outputs): void {
    // judged as the msg really leaves: one waiting for its recipient's earlier msgs may leave after close began
    if (this.place.waiting) this.place.emit(() => this.leaveBy(out));
    else this.leaveBy(out);
  }

  lineUp(whose: Whose): void {
    this.whose = whose;
    this.place.join(whose.org, whose.recipient);
  }

  /** The handler has finished (with `err`, the msg goes to Catch): at the msg's turn, done, and the next one begins. */
  end(err?: Error): void {
    // to Catch before the recipient's later msgs leave
    if (this.place.waiting) {
      this.place.leave(() => this.finish(err));
      return;
    }
    try {
      this.finish(err);
    } finally {
      this.place.departNow();
    }
  }

  private leaveBy(out: Outputs): void {
    const { closing, counts } = this.shared;
    if (!closing.isClosing) {
      countOutputs(counts, out);
      this.nodeSend(out);
      return;
    }
    void closing.send(out, (now) => {
      countOutputs(counts, now);
      this.nodeSend(now);
    }, this.whose);
  }

  private finish(err: Error | undefined): void {
    if (err) {
      this.shared.status.error(err.message.slice(0, 60));
      this.shared.counts?.failed(err);
    }
    try {
      this.done(err);
    } finally {
      this.shared.leave();
    }
  }
}

/**
 * The reason a gate gave a msg it sends out: the last trail entry is the
 * gate's own (every gate writes one before it sends), so what an earlier gate
 * or the flow wrote is never counted as this gate's.
 */
function reasonOf(msg: NodeMessage): unknown {
  const admission = (msg as { admission?: Partial<Admission> }).admission;
  const trail = Array.isArray(admission?.trail) ? admission.trail : undefined;
  const last = trail?.[trail.length - 1];
  return last ? last.reason : admission?.reason;
}

/** Counts each msg of `out` by the output it leaves (allowed, skipped, deferred), by the reason its gate gave. */
export function countOutputs(counts: GateCounts | undefined, out: Outputs): void {
  if (!counts) return;
  if (!Array.isArray(out)) {
    if (out) counts.leftBy("allowed", reasonOf(out));
    return;
  }
  for (let i = 0; i < out.length; i++) {
    const msg = out[i];
    const output = GATE_OUTPUTS[i];
    if (msg && output) counts.leftBy(output, reasonOf(msg));
  }
}
