/**
 * GCRA (the generic cell rate algorithm) as both stores run it: lua/gcra.lua
 * in Redis, MemoryStore in process. One number per ceiling key, the TAT
 * (theoretical arrival time), in whole microseconds of the store's clock.
 *
 * A ceiling of `rate` msgs per `interval` seconds with `burst`: the emission
 * interval T = interval / rate, the tolerance τ = (burst − 1) × T. A msg
 * arriving at `now` conforms at `max(now, max(TAT, now) − τ)`; when that is
 * at most `maxWait` away it reserves that instant (TAT moves on by T),
 * otherwise nothing changes and the wait is its retry-after. `maxWait` 0 is
 * skip mode: only a msg that conforms now passes.
 */
export interface GcraLimit {
  /** T, µs (whole: rounded up, so the ceiling is never exceeded by rounding) */
  emissionUs: number;
  /** τ = (burst − 1) × T, µs */
  toleranceUs: number;
}

export interface GcraStep {
  allowed: boolean;
  /** allowed: µs from now until its reserved instant (0 = now); refused: µs until it would conform */
  waitUs: number;
  /** the TAT after this msg (unchanged when refused) */
  tat: number;
}

/** Checks a ceiling's settings and turns them into T and τ; a bad one throws naming its property. */
export function gcraLimit(rate: number, intervalSeconds: number, burst: number): GcraLimit {
  if (!Number.isFinite(rate) || rate <= 0) throw new RangeError(`rate: must be a number > 0, got ${JSON.stringify(rate)}`);
  if (!Number.isFinite(intervalSeconds) || intervalSeconds <= 0) throw new RangeError(`interval: must be seconds > 0, got ${JSON.stringify(intervalSeconds)}`);
  if (!Number.isInteger(burst) || burst < 1) throw new RangeError(`burst: must be a whole number >= 1, got ${JSON.stringify(burst)}`);
  const emissionUs = Math.max(1, Math.ceil((intervalSeconds * 1_000_000) / rate));
  return { emissionUs, toleranceUs: (burst - 1) * emissionUs };
}

/** One msg against a key whose TAT is `tat` (undefined: never seen, or expired), at `nowUs`. */
export function gcraStep(tat: number | undefined, nowUs: number, limit: GcraLimit, maxWaitUs: number): GcraStep {
  const base = tat === undefined || tat < nowUs ? nowUs : tat;
  const at = Math.max(nowUs, base - limit.toleranceUs);
  const waitUs = at - nowUs;
  if (waitUs > maxWaitUs) return { allowed: false, waitUs, tat: tat ?? nowUs };
  return { allowed: true, waitUs, tat: base + limit.emissionUs };
}

/**
 * Gives back `count` reservations (their msgs were dropped), the latest at
 * `lastUs` and the others T apart before it: the TAT moves back, never into
 * the past. Only when nothing was reserved after `lastUs` (the TAT is the one
 * that reservation left, lastUs + τ + T): a later reservation, another gate's
 * or instance's, keeps its instant, and moving the TAT back under it would let
 * the next msgs share instants with it, over the ceiling.
 */
export function gcraRefund(tat: number, nowUs: number, limit: GcraLimit, count: number, lastUs: number): number {
  if (tat > lastUs + limit.toleranceUs + limit.emissionUs) return tat;
  return Math.max(nowUs, tat - count * limit.emissionUs);
}

/**
 * Of some dropped msgs' reserved instants, the ones that can be given back:
 * the latest, and those before it T apart without a gap (a gap is an instant
 * another msg still holds). Undefined when there is none.
 */
export function refundable(reservedUs: readonly number[], emissionUs: number): { count: number; lastUs: number } | undefined {
  const sorted = [...new Set(reservedUs.filter((us) => Number.isFinite(us)))].sort((a, b) => b - a);
  const last = sorted[0];
  if (last === undefined) return undefined;
  let count = 1;
  while (count < sorted.length && sorted[count] === last - count * emissionUs) count++;
  return { count, lastUs: last };
}

/** How long the store keeps a key after `tat`'s step: past the TAT it means nothing (a fresh key), plus a grace second. */
export function gcraKeepMs(tat: number, nowUs: number): number {
  return Math.ceil((tat - nowUs) / 1000) + 1000;
}
