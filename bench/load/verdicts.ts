import type { Admission } from "../../src/core/admission";
import type { CompleteEvent } from "../nodeRed/embeddedRed";

/** What the gate decided for the msgs of one run. */
export interface Verdicts {
  allowed: number;
  skipped: number;
  failOpen: number;
  errors: number;
  /** the first error text, to show why */
  firstError?: string;
}

export function noVerdicts(): Verdicts {
  return { allowed: 0, skipped: 0, failOpen: 0, errors: 0 };
}

/** Tallies one completed msg: an error passed to done(), else msg.admission (SPEC §3). */
export function tally(verdicts: Verdicts, event: CompleteEvent): void {
  if (event.error) {
    verdicts.errors++;
    verdicts.firstError ??= event.error.message;
    return;
  }
  const admission = (event.msg as { admission?: Admission }).admission;
  if (admission?.reason === "fail_open") verdicts.failOpen++;
  if (admission?.status === "allowed") verdicts.allowed++;
  else if (admission?.status === "skipped") verdicts.skipped++;
  else {
    verdicts.errors++;
    verdicts.firstError ??= `msg completed without an admission verdict (${JSON.stringify(admission?.status)})`;
  }
}
