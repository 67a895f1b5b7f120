import type { Candidate } from "./candidates";
import type { CheckVerdict } from "./decisions";

export type Blocked = { cap_id: string; retry_after_seconds: number | null };

/** What check mode writes on the msg (SPEC §5): keyed by candidate, or the send's own verdict. */
export type CheckAnswer =
  | { eligible: boolean; remaining: number | null; blocked?: Blocked }
  | { eligible: Record<string, boolean>; remaining: Record<string, number | null>; blocked: Record<string, Blocked> };

/**
 * The answer of a check: per candidate key or, for a msg without candidates,
 * its own. Plain objects a function node can call hasOwnProperty on; every
 * key (the caller's ids, `__proto__` too) becomes an own property and none
 * reaches a prototype (see `own`). With
 * no verdicts (an exempt tier, or the store failed open), everything is
 * eligible and nothing counted.
 */
export function checkAnswer(candidates: readonly Candidate[] | undefined, verdicts: readonly CheckVerdict[] | undefined): CheckAnswer {
  const verdict = (i: number): CheckVerdict => verdicts?.[i] ?? { eligible: true, remaining: null };
  if (!candidates) {
    const own = verdict(0);
    return { eligible: own.eligible, remaining: own.remaining, ...(own.blocked ? { blocked: own.blocked } : {}) };
  }
  const eligible: Record<string, boolean> = {};
  const remaining: Record<string, number | null> = {};
  const blocked: Record<string, Blocked> = {};
  for (let i = 0; i < candidates.length; i++) {
    const key = candidates[i].key;
    const v = verdict(i);
    own(eligible, key, v.eligible);
    own(remaining, key, v.remaining);
    if (v.blocked) own(blocked, key, v.blocked);
  }
  return { eligible, remaining, blocked };
}

/**
 * Sets `record[key]` as an own, enumerable property, whatever the key. An
 * assignment makes an own property for every key but `__proto__` (the one
 * accessor a plain object inherits; assigned, it would set the prototype),
 * and is several times cheaper than defining one: a check sets two or three
 * per candidate.
 */
function own<T>(record: Record<string, T>, key: string, value: T): void {
  if (key === "__proto__") Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  else record[key] = value;
}
