import type { NodeMessage } from "node-red";
import type { Admission } from "../../core/admission";
import type { CapService } from "../../core/capService";
import { verdictText } from "../../core/history/verdictText";
import { HistoryStamp } from "../../core/history/claimHistory";
import type { Outputs } from "./outputs";
import type { Whose } from "./parking";

/**
 * Notes each verdict a gate makes in its recipient's decision history: as
 * the msg leaves (allowed, skipped, deferred), or as it is held. Keyed by the
 * recipient as the store keys it, never by the address.
 */
export class VerdictLog {
  private stamp: HistoryStamp | undefined;

  constructor(private readonly service: CapService, private readonly gateId: string, private readonly gateType: string) {}

  /** What this gate's claims carry so the store writes an allowed verdict with the claim (claimHistory.ts). */
  claimStamp(): HistoryStamp {
    const history = this.service.history;
    // the lifetime grows as rules with longer windows are seen
    if (this.stamp === undefined || history.lifetimeMs !== this.stamp.lifetimeMs) {
      this.stamp = new HistoryStamp(history.size, history.lifetimeMs, this.gateType, this.gateId);
    }
    return this.stamp;
  }

  /** The verdict of the msg `out` sends (a gate sends one msg a verdict). */
  sent(out: Outputs, whose: Whose): void {
    if (!Array.isArray(out)) {
      this.note(out, whose);
      return;
    }
    for (const msg of out) {
      if (msg) {
        this.note(msg, whose);
        return;
      }
    }
  }

  note(msg: NodeMessage, whose: Whose): void {
    const entry = verdictText((msg as { admission?: Partial<Admission> }).admission, this.gateId, this.gateType, Date.now());
    if (entry !== undefined) this.service.history.note(whose.org, this.service.recipientToken(whose.recipient), entry);
  }
}
