/**
 * Time-zone arithmetic for quiet hours, on the built-in Intl.DateTimeFormat
 * (Node 20 ships full ICU and its tz database). Pure: instants (epoch ms) in,
 * instants or wall-clock fields out; nothing here reads the clock.
 */
import { QuietHoursError } from "./errors";

/** Wall-clock fields of an instant in a zone. `weekday`: 0 = Sunday … 6 = Saturday. */
export interface LocalParts {
  year: number;
  month: number; // 1–12
  day: number; // 1–31
  hour: number; // 0–23
  minute: number;
  second: number;
  weekday: number;
}

/**
 * A wall-clock time to place in a zone. Out-of-range fields roll over the way
 * Date.UTC does (day 32 of January is 1 February, hour 24 is the next day's
 * 00:00), which is how callers step from one local date to the next.
 */
export interface LocalDateTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second?: number;
}

const HOUR_MS = 3_600_000;
/**
 * Offsets are sampled this far either side of a wall time. Every transition
 * the zone makes near that wall time falls inside the span (offsets lie in
 * −12 h…+14 h and transitions are months apart; Pacific/Apia's skipped day in
 * 2011 is the widest gap, 24 h).
 */
const SAMPLE_SPAN_MS = 36 * HOUR_MS;

// Building an Intl.DateTimeFormat costs tens of microseconds, formatting with
// one costs about one: keep one per zone spelling. Bounded so a stream of
// oddly cased zone names cannot grow it without limit.
const MAX_FORMATTERS = 512;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(zone: string, field: string): Intl.DateTimeFormat {
  const cached = formatters.get(zone);
  if (cached) return cached;
  let formatter: Intl.DateTimeFormat;
  try {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      era: "short",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
  } catch {
    throw new QuietHoursError(field, `unknown time zone ${JSON.stringify(zone)}`);
  }
  if (formatters.size >= MAX_FORMATTERS) formatters.clear();
  formatters.set(zone, formatter);
  return formatter;
}

/**
 * Checks an IANA zone name and returns the name to use for it. A name that
 * differs from ICU's only in case gets ICU's spelling ("america/new_york" →
 * "America/New_York", "utc" → "UTC"); a valid alias is kept as written
 * ("Asia/Kolkata" stays, though ICU's canonical id is the older
 * "Asia/Calcutta"), since Intl treats aliases identically and the author's
 * spelling is what a status line should show. Anything Intl does not know
 * (including "", non-strings and, on Node 20, offsets like "+05:30") throws a
 * QuietHoursError naming the zone: `timezone: unknown time zone "Mars/Olympus"`.
 */
export function checkTimeZone(zone: unknown, field = "timezone"): string {
  if (typeof zone !== "string" || zone === "") {
    throw new QuietHoursError(field, `expected an IANA time zone name such as "Europe/London", got ${describe(zone)}`);
  }
  const resolved = formatterFor(zone, field).resolvedOptions().timeZone;
  return resolved.toLowerCase() === zone.toLowerCase() ? resolved : zone;
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(value);
  return `${Array.isArray(value) ? "array" : typeof value} ${JSON.stringify(value) ?? typeof value}`;
}

function requireInstant(instantMs: number, what = "instantMs"): void {
  if (typeof instantMs !== "number" || !Number.isFinite(instantMs)) {
    throw new RangeError(`${what} must be a finite epoch-millisecond number, got ${String(instantMs)}`);
  }
}

/** Epoch ms of a wall time read as if it were UTC; fields roll over like Date.UTC, years 0–99 stay literal. */
export function wallClockMs(year: number, month: number, day: number, hour = 0, minute = 0, second = 0): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, 0);
  return d.getTime();
}

function partsAt(instantMs: number, zone: string, field: string): Omit<LocalParts, "weekday"> {
  const out = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  let bc = false;
  for (const p of formatterFor(zone, field).formatToParts(instantMs)) {
    switch (p.type) {
      case "year": out.year = Number(p.value); break;
      case "month": out.month = Number(p.value); break;
      case "day": out.day = Number(p.value); break;
      case "hour": out.hour = Number(p.value) % 24; break; // some ICU builds print 24 for midnight
      case "minute": out.minute = Number(p.value); break;
      case "second": out.second = Number(p.value); break;
      case "era": bc = /^B/i.test(p.value); break;
      default: break;
    }
  }
  if (bc) out.year = 1 - out.year;
  return out;
}

/** The wall-clock fields of `instantMs` in `zone` (seconds truncated, not rounded). */
export function localParts(instantMs: number, zone: string): LocalParts {
  requireInstant(instantMs);
  const p = partsAt(instantMs, zone, "timezone");
  return { ...p, weekday: new Date(wallClockMs(p.year, p.month, p.day)).getUTCDay() };
}

/** The wall clock at `instantMs`, to the second, as epoch ms read as UTC. */
function wallAt(instantMs: number, zone: string): number {
  const p = partsAt(instantMs, zone, "timezone");
  return wallClockMs(p.year, p.month, p.day, p.hour, p.minute, p.second);
}

/** The zone's UTC offset at `instantMs`, in ms (New York in winter: −18 000 000). */
export function offsetMs(instantMs: number, zone: string): number {
  requireInstant(instantMs);
  const whole = Math.floor(instantMs / 1000) * 1000;
  return wallAt(whole, zone) - whole;
}

/**
 * The instant at which the wall clock in `zone` reads `local` — precisely,
 * **the first instant at which the zone's clock reads `local` or later**:
 *
 * - an ordinary time has one instant, and that is it;
 * - an ambiguous time (the repeated hour when clocks go back, e.g. 01:30 on
 *   2026-11-01 in America/New_York) gives its FIRST occurrence, still on the
 *   earlier offset (01:30 EDT = 05:30Z, not 01:30 EST = 06:30Z);
 * - a time that does not exist (inside the gap when clocks go forward, e.g.
 *   02:30 on 2026-03-08 in America/New_York) gives the first instant after
 *   the gap, the transition itself, when the clock reads the gap's end
 *   (03:00 EDT = 07:00Z); it is not shifted by the gap's length.
 *
 * Works for any offset and any size of shift (Asia/Kathmandu +05:45,
 * Australia/Lord_Howe's 30-minute DST). `second` defaults to 0.
 */
export function zonedTimeToInstant(local: LocalDateTime, zone: string): number {
  const { year, month, day, hour, minute } = local;
  const second = local.second ?? 0;
  for (const [name, v] of Object.entries({ year, month, day, hour, minute, second })) {
    if (!Number.isInteger(v)) throw new RangeError(`local.${name} must be an integer, got ${String(v)}`);
  }
  const wall = wallClockMs(year, month, day, hour, minute, second);
  if (!Number.isFinite(wall)) throw new RangeError(`local time ${JSON.stringify(local)} is out of range`);

  // Every offset the zone uses around this wall time, read at instants either side of it.
  const before = wallAt(wall - SAMPLE_SPAN_MS, zone) - (wall - SAMPLE_SPAN_MS);
  const after = wallAt(wall + SAMPLE_SPAN_MS, zone) - (wall + SAMPLE_SPAN_MS);
  if (before === after && wallAt(wall - before, zone) === wall) return wall - before; // no transition near: the usual case
  const offsets = new Set<number>([before, after]);
  offsets.add(wallAt(wall, zone) - wall);
  for (const o of [...offsets]) offsets.add(wallAt(wall - o, zone) - (wall - o));

  // Instants whose clock reads exactly `wall`: two in a repeated hour, one normally, none in a gap.
  let first = Number.POSITIVE_INFINITY;
  for (const o of offsets) {
    const t = wall - o;
    if (t < first && wallAt(t, zone) === wall) first = t;
  }
  if (first !== Number.POSITIVE_INFINITY) return first;

  // A gap: on the larger offset the instant is still before the transition (the clock
  // reads earlier than `wall`), on the smaller it is after (reads later). Find the
  // transition, the first second whose clock reads `wall` or later.
  let lo = (wall - Math.max(...offsets)) / 1000;
  let hi = (wall - Math.min(...offsets)) / 1000;
  if (!(wallAt(lo * 1000, zone) < wall && wallAt(hi * 1000, zone) > wall)) {
    throw new Error(`cannot place ${new Date(wall).toISOString().slice(0, 19)} in ${zone}`); // not reachable with tzdb data
  }
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallAt(mid * 1000, zone) >= wall) hi = mid;
    else lo = mid;
  }
  return hi * 1000;
}
