import type { Admission } from "../../src/core/admission";
import type { CompleteEvent } from "../nodeRed/embeddedRed";

/** What the gate decided for the msgs of one run. */
export interface Verdicts {
  allowed: number;
  skipped: number;
  failOpen: number;
  /** allowed because the send queue was full (maxQueued), the fail mode deciding */
  overloaded: number;
  errors: number;
  /** the first error text, to show why */
  firstError?: string;
}

export function noVerdicts(): Verdicts {
  return { allowed: 0, skipped: 0, failOpen: 0, overloaded: 0, errors: 0 };
}

/** The verdicts of several runs together (the first error kept). */
export function sumVerdicts(all: readonly Verdicts[]): Verdicts {
  const sum = noVerdicts();
  for (const v of all) {
    sum.allowed += v.allowed;
    sum.skipped += v.skipped;
    sum.failOpen += v.failOpen;
    sum.overloaded += v.overloaded;
    sum.errors += v.errors;
    if (v.firstError !== undefined) sum.firstError ??= v.firstError;
  }
  return sum;
}

/**
 * Tallies one completed msg: an error passed to done(), else msg.admission (SPEC §3).
 * With `capIds`, a msg admitted (not failing open) without a claim on exactly
 * those caps is an error: rules that failed to load, or loaded empty, must not
 * pass for a fast row.
 */
export function tally(verdicts: Verdicts, event: CompleteEvent, capIds?: ReadonlySet<string>): void {
  if (event.error) {
    verdicts.errors++;
    verdicts.firstError ??= event.error.message;
    return;
  }
  const admission = (event.msg as { admission?: Admission }).admission;
  if (admission?.reason === "fail_open") verdicts.failOpen++;
  else if (admission?.reason === "overloaded") verdicts.overloaded++;
  else if (capIds && admission?.status === "allowed" && !claimedExactly(admission, capIds)) {
    verdicts.errors++;
    verdicts.firstError ??= `msg admitted with caps [${claimedCaps(admission).join(", ")}], not the scenario's [${[...capIds].join(", ")}]`;
    return;
  }
  if (admission?.status === "allowed") verdicts.allowed++;
  else if (admission?.status === "skipped") verdicts.skipped++;
  else {
    verdicts.errors++;
    verdicts.firstError ??= `msg completed without an admission verdict (${JSON.stringify(admission?.status)})`;
  }
}

/** The cap ids the gate claimed for an admitted msg (one gate here, so one cap claim at most). */
export function claimedCaps(admission: Admission): string[] {
  return admission.claims.find((c) => c.kind === "cap")?.cap_ids ?? [];
}

function claimedExactly(admission: Admission, capIds: ReadonlySet<string>): boolean {
  const claimed = claimedCaps(admission);
  return claimed.length === capIds.size && claimed.every((id) => capIds.has(id));
}
