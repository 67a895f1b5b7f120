import type { NodeMessage } from "node-red";
import { Place } from "../../core/outputOrder";
import { keepShape } from "../../core/keptShapes";
import type { GateCounts } from "../../core/metrics/gateCounts";
import type { GateStatus } from "./status";
import type { Whose } from "./parking";
import type { GateOutlet } from "./outlet";
import type { Outputs } from "./outputs";
import type { VerdictLog } from "./verdictLog";
import type { HistoryStamp } from "../../core/history/claimHistory";

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
  /** what a claim carries so the store writes its allowed verdict in the recipient's history (undefined: no history) */
  historyStamp(): HistoryStamp | undefined;
  /** the store wrote this msg's verdict in the history already (with its claim): not noted again as it leaves */
  historyKept(): void;
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
  /** where its verdicts are noted for their recipients' history (none: off, or a gate whose answers are no verdicts) */
  verdicts: VerdictLog | undefined;
}

/**
 * One msg's passage through a gate: one object a msg, its methods on the
 * prototype (a burst keeps thousands of them alive until the store answers,
 * so closures per msg would cost the garbage collector dearly).
 */
export class MsgTurn implements Turn {
  private whose: Whose | undefined;
  private sent = false;
  /** its verdict is in the history already */
  private kept = false;

  constructor(
    private readonly shared: TurnShared,
    private readonly place: Place,
    /** the msg, for its verdict should it be held rather than sent */
    private readonly msg: NodeMessage,
    /** the runtime's done for this msg */
    private readonly done: Done,
  ) {}

  historyStamp(): HistoryStamp | undefined {
    return this.shared.verdicts?.claimStamp();
  }

  historyKept(): void {
    this.kept = true;
  }

  send(out: Outputs): void {
    this.sent = true;
    // noted as it is decided: once sent, a later gate may write its own verdict on the same msg
    if (this.whose && this.shared.verdicts && !this.kept) this.shared.verdicts.sent(out, this.whose);
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
    // ended with nothing sent and no error: the gate held it
    if (!err && !this.sent && !this.kept && this.whose && this.shared.verdicts) this.shared.verdicts.note(this.msg, this.whose);
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

// never sent: nothing of it is used but its shape
keepShape(new MsgTurn({ leave: () => undefined } as unknown as TurnShared, new Place(new Map()), {}, () => undefined));
