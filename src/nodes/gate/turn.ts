import type { NodeMessage } from "node-red";
import type { Place } from "../../core/outputOrder";
import type { GateCounts } from "../../core/metrics/gateCounts";
import type { GateStatus } from "./status";
import type { Whose } from "./parking";
import type { GateOutlet } from "./outlet";
import type { Outputs } from "./outputs";

export type Done = (err?: Error) => void;

/** What a gate's handler is given with each msg: how the msg leaves, in its recipient's order. */
export interface Turn {
  /** sends the msg out (by output) as soon as the msgs of its recipient that came before it have left */
  send(out: Outputs): void;
  /** puts the msg in its recipient's line, once the gate has read whose it is */
  lineUp(whose: Whose): void;
  /**
   * answers the msg's HTTP request now (HTTP mode, a msg held for later) by
   * the skipped output, where an http response node waits: not a verdict,
   * so neither counted nor kept for the next deployment
   */
  answer(reply: NodeMessage): void;
  /**
   * the msg is done (with `err`, it goes to Catch): for a handler that
   * returned no promise, which must call it exactly once; the gate calls it
   * for the others, when their promise settles
   */
  end(err?: Error): void;
}

/** What every msg's turn at one gate shares. */
export interface TurnShared {
  outlet: GateOutlet;
  counts: GateCounts | undefined;
  status: GateStatus;
  /** the gate's intake, told when a msg is done so the next one in line begins */
  leave(): void;
}

/**
 * One msg's passage through a gate: one object a msg, its methods on the
 * prototype (a burst keeps thousands of them alive until the store answers,
 * so closures per msg would cost the garbage collector dearly).
 */
export class MsgTurn implements Turn {
  private whose: Whose | undefined;

  constructor(
    private readonly shared: TurnShared,
    private readonly place: Place,
    /** the runtime's done for this msg */
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

  answer(reply: NodeMessage): void {
    this.shared.outlet.answer([null, reply]);
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
    void this.shared.outlet.send(out, this.whose);
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
