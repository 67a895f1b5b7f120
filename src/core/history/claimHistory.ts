import type { ApplicableCap } from "../caps/decisions";
import type { CapRule } from "../rules/rules";
import { capsText, gatePart, MAX_AFTER_TIME } from "./historyEntry";

/**
 * A frequency-cap-gate's allowed verdict goes into the recipient's history in
 * the claim's own store step (lua/caps/claim.lua): the hash the claim writes
 * is where the history lives, so it costs the store a field more in a write
 * it makes anyway, and the gate nothing after. The gate stamps each send with
 * what the entry needs beyond the claim (the history's size and lifetime,
 * which gate it is); the claim adds the caps, the store its clock.
 */

/** What a claim the store allows adds to the recipient's history: one object for a gate's claims on the same caps. */
export interface ClaimHistory {
  /** entries kept: at least the newest this many */
  readonly keep: number;
  /** ms the history lives after this write, at least */
  readonly lifetimeMs: number;
  /** the entry after its time (`|<gate part>|0||<caps>|`: outcome 0, allowed; no reason, no retry: historyEntry.ts entryText), the store's now goes before it */
  readonly after: string;
}

/**
 * What a gate's allowed claims all write: its history's size and lifetime,
 * which gate it is. A gate's claims are mostly on the same caps, so the
 * history of the last caps is kept: a burst's claims share one object, which
 * the store reads once per call.
 */
export class HistoryStamp {
  private readonly gatePart: string;
  /** what the caps' ids may take of an entry */
  private readonly capsRoom: number;
  private lastRules: readonly CapRule[] = [];
  private lastHistory: ClaimHistory | undefined;

  constructor(readonly keep: number, readonly lifetimeMs: number, gateType: string, gate: string) {
    this.gatePart = gatePart(gateType, gate);
    // after the store's time and its `|`: `<gate part>|0||<caps>|`
    this.capsRoom = MAX_AFTER_TIME - this.gatePart.length - "|0|||".length;
  }

  /** The history a claim of `caps` writes if the store allows it: the caps it takes a slot in, as many as fit (capsText). */
  claimed(caps: readonly ApplicableCap[]): ClaimHistory {
    const last = this.lastHistory;
    if (last !== undefined && this.sameRules(caps)) return last;
    const rules = caps.map((cap) => cap.rule);
    const ids = capsText(rules.map((rule) => rule.id), this.capsRoom);
    const history: ClaimHistory = { keep: this.keep, lifetimeMs: this.lifetimeMs, after: `|${this.gatePart}|0||${ids}|` };
    this.lastRules = rules;
    this.lastHistory = history;
    return history;
  }

  private sameRules(caps: readonly ApplicableCap[]): boolean {
    const rules = this.lastRules;
    if (rules.length !== caps.length) return false;
    for (let i = 0; i < caps.length; i++) if (rules[i] !== caps[i].rule) return false;
    return true;
  }
}
