import type { CapDecision, DecisionTo } from "../../core/caps/decisions";
import type { CapService } from "../../core/capService";
import { keepShape } from "../../core/keptShapes";
import type { Send } from "../../core/send";
import type { AdmittedMsg } from "./refusal";
import type { Turn } from "./turn";

/** What a gate does with a claim's decision; a promise when a refusal has work to do first. */
export type Decide = (msg: AdmittedMsg, turn: Turn, service: CapService, sendData: Send, decision: CapDecision) => Promise<void> | undefined;

/**
 * One msg's claim, told its decision by the engine (CapEngine.claimTo): the
 * verdict is written (`decide`, the gate's) and the msg's turn ends, a
 * refusal's work first. One object per msg and no promise: a burst keeps
 * thousands of them until the store answers. A class of the module, not of
 * each gate: V8 keeps one shape for every gate's, and a stand-in keeps it
 * (keptShapes.ts).
 */
export class ClaimVerdict implements DecisionTo {
  constructor(
    private readonly decide: Decide,
    private readonly msg: AdmittedMsg,
    private readonly turn: Turn,
    private readonly service: CapService,
    private readonly sendData: Send,
  ) {}

  decided(decision: CapDecision): void {
    let refusing: Promise<void> | undefined;
    try {
      refusing = this.decide(this.msg, this.turn, this.service, this.sendData, decision);
    } catch (err) {
      this.turn.end(err as Error);
      return;
    }
    if (refusing) refusing.then(() => this.turn.end(), (err: Error) => this.turn.end(err));
    else this.turn.end();
  }

  failed(err: unknown): void {
    this.turn.end(err as Error);
  }
}

// never told a decision: nothing of it is used but its shape
keepShape(new ClaimVerdict(() => undefined, {} as AdmittedMsg, {} as Turn, {} as CapService, {} as Send));
