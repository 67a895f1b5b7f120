/**
 * Release spreading (SPEC §8): msgs held until a quiet window ends are not
 * all released at that instant but uniformly over [end, end + jitter).
 */
import { QuietHoursError } from "./errors";

/**
 * endMs + floor(random() × jitterSeconds × 1000): an instant uniform over
 * [endMs, endMs + jitterSeconds s). jitterSeconds 0 gives endMs. `random`
 * must return [0, 1) like Math.random; a value of 1 or more is held just
 * inside the span. A negative or non-finite jitter throws a QuietHoursError
 * naming `jitter`.
 */
export function releaseAt(endMs: number, jitterSeconds: number, random: () => number = Math.random): number {
  if (typeof jitterSeconds !== "number" || !Number.isFinite(jitterSeconds) || jitterSeconds < 0) {
    throw new QuietHoursError("jitter", `expected a number of seconds, 0 or more, got ${String(jitterSeconds)}`);
  }
  const spanMs = jitterSeconds * 1000;
  if (spanMs === 0) return endMs;
  const offset = Math.floor(random() * spanMs);
  return endMs + Math.min(Math.max(offset, 0), Math.ceil(spanMs) - 1);
}
