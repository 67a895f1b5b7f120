import type { Candidate } from "./candidates";
import type { CheckVerdict } from "./decisions";

export type Blocked = { cap_id: string; retry_after_seconds: number | null };

/** What check mode writes on the msg (SPEC §5): keyed by candidate, or the send's own verdict. */
export type CheckAnswer =
  | { eligible: boolean; remaining: number | null; blocked?: Blocked }
  | { eligible: Record<string, boolean>; remaining: Record<string, number | null>; blocked: Record<string, Blocked> };

/**
 * The answer of a check: per candidate key (null-prototype objects, since the
 * keys are the caller's ids) or, for a msg without candidates, its own. With
 * no verdicts (an exempt tier, or the store failed open), everything is
 * eligible and nothing counted.
 */
export function checkAnswer(candidates: readonly Candidate[] | undefined, verdicts: readonly CheckVerdict[] | undefined): CheckAnswer {
  const verdict = (i: number): CheckVerdict => verdicts?.[i] ?? { eligible: true, remaining: null };
  if (!candidates) {
    const own = verdict(0);
    return { eligible: own.eligible, remaining: own.remaining, ...(own.blocked ? { blocked: own.blocked } : {}) };
  }
  const eligible = Object.create(null) as Record<string, boolean>;
  const remaining = Object.create(null) as Record<string, number | null>;
  const blocked = Object.create(null) as Record<string, Blocked>;
  for (let i = 0; i < candidates.length; i++) {
    const key = candidates[i].key;
    const v = verdict(i);
    eligible[key] = v.eligible;
    remaining[key] = v.remaining;
    if (v.blocked) blocked[key] = v.blocked;
  }
  return { eligible, remaining, blocked };
}
