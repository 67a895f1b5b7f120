/**
 * Quiet windows (SPEC §8 quiet-hours-gate, §11 properties `start`, `end`,
 * `days`, `timezone`). Pure: an instant in, an instant (or null) out.
 *
 * Semantics:
 * - `days` lists the days a window STARTS on, 0 = Sunday … 6 = Saturday, in
 *   the window's zone. An empty list means never quiet.
 * - start < end: within one day (13:00–14:00).
 * - start > end: across midnight (21:00–08:00 runs from 21:00 on a listed day
 *   to 08:00 the next day, whether or not that next day is listed).
 * - start == end: the whole day, 24 h of wall clock from `start` on a listed
 *   day to `start` the next day.
 * - Both ends are wall-clock times, placed with zonedTimeToInstant: on a DST
 *   day a window still ends at 08:00 local. A boundary inside a skipped hour
 *   falls on the end of the gap (02:30 on spring-forward day → 03:00); one in
 *   a repeated hour falls on its first occurrence (so a window ending 01:30
 *   on fall-back day ends at 01:30 on the earlier offset).
 * - A window is half open, [start, end): quiet at start, sending again at end.
 * - Windows that touch (whole-day windows on consecutive days) are one quiet
 *   run: quietUntil gives the end of the run, so a deferred msg is not
 *   released into another quiet day. A run that never ends (every day listed,
 *   start == end) gives Infinity.
 */
import { QuietHoursError } from "./errors";
import { checkTimeZone, localParts, wallClockMs, zonedTimeToInstant } from "./zone";

export interface QuietWindow {
  /** "HH:MM", 24-hour, zero-padded. */
  start: string;
  /** "HH:MM", 24-hour, zero-padded. */
  end: string;
  /** Days the window starts on, 0 = Sunday … 6 = Saturday; sorted, no repeats. */
  days: number[];
  /** IANA zone (as returned by checkTimeZone). */
  timezone: string;
}

export interface ParseQuietWindowOptions {
  /** Used for each field `raw` leaves out (undefined); e.g. the gate's own window under a partial msg.quietHours. */
  defaults?: Partial<Record<keyof QuietWindow, unknown>>;
  /** Names the object in errors: with "quietHours", a bad start is reported as `quietHours.start: …`. */
  field?: string;
}

const TIME = /^(\d{1,2}):(\d{2})$/;

/**
 * Validates a quiet window and returns it normalised ("8:00" → "08:00", days
 * sorted and de-duplicated, numeric strings "1" accepted as days, zone via
 * checkTimeZone). Throws a QuietHoursError naming the field: start, end, days
 * or timezone.
 */
export function parseQuietWindow(raw: unknown, options: ParseQuietWindowOptions = {}): QuietWindow {
  const objectName = options.field ?? "quietHours";
  const name = (f: string) => (options.field ? `${options.field}.${f}` : f);
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw new QuietHoursError(objectName, `expected an object { start, end, days, timezone }, got ${describe(raw)}`);
  }
  const given = raw as Record<string, unknown>;
  const pick = (f: keyof QuietWindow): unknown => (given[f] !== undefined ? given[f] : options.defaults?.[f]);
  return {
    start: parseTimeOfDay(pick("start"), name("start")),
    end: parseTimeOfDay(pick("end"), name("end")),
    days: parseDays(pick("days"), name("days")),
    timezone: checkTimeZone(pick("timezone"), name("timezone")),
  };
}

/** "HH:MM" (or "H:MM") from 00:00 to 23:59 → zero-padded "HH:MM"; otherwise a QuietHoursError naming `field`. */
export function parseTimeOfDay(value: unknown, field: string): string {
  if (typeof value !== "string") {
    throw new QuietHoursError(field, `expected a time of day "HH:MM", got ${describe(value)}`);
  }
  const m = TIME.exec(value);
  const hour = m ? Number(m[1]) : NaN;
  const minute = m ? Number(m[2]) : NaN;
  if (!(hour <= 23 && minute <= 59)) {
    throw new QuietHoursError(field, `${JSON.stringify(value)} is not a time of day; expected "HH:MM" from "00:00" to "23:59"`);
  }
  return `${String(hour).padStart(2, "0")}:${String(minute).padStart(2, "0")}`;
}

function parseDays(value: unknown, field: string): number[] {
  if (!Array.isArray(value)) {
    throw new QuietHoursError(field, `expected an array of days of the week, 0 (Sunday) to 6 (Saturday), got ${describe(value)}`);
  }
  const days = new Set<number>();
  for (const v of value) {
    const n: unknown = typeof v === "string" && /^\d$/.test(v) ? Number(v) : v;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > 6) {
      throw new QuietHoursError(field, `${describe(v)} is not a day of the week; expected integers 0 (Sunday) to 6 (Saturday)`);
    }
    days.add(n);
  }
  return [...days].sort((a, b) => a - b);
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(value);
  return `${Array.isArray(value) ? "array" : typeof value} ${JSON.stringify(value) ?? typeof value}`;
}

function hm(time: string): { hour: number; minute: number } {
  const m = TIME.exec(time);
  if (!m) throw new RangeError(`not a parsed quiet window time: ${JSON.stringify(time)}`);
  return { hour: Number(m[1]), minute: Number(m[2]) };
}

/** The window that starts on local date y-m-d (which must be a listed day), as instants [start, end). */
function windowFrom(window: QuietWindow, year: number, month: number, day: number): { start: number; end: number } {
  const s = hm(window.start);
  const e = hm(window.end);
  const nextDay = e.hour * 60 + e.minute <= s.hour * 60 + s.minute ? 1 : 0; // across midnight, or whole day
  return {
    start: zonedTimeToInstant({ year, month, day, ...s }, window.timezone),
    end: zonedTimeToInstant({ year, month, day: day + nextDay, ...e }, window.timezone),
  };
}

/** Local date `offsetDays` away from y-m-d, with its weekday. */
function shiftDate(year: number, month: number, day: number, offsetDays: number) {
  const d = new Date(wallClockMs(year, month, day + offsetDays));
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(), weekday: d.getUTCDay() };
}

/** End of the window containing `instantMs` (the one that started on the local day before or the same day), or null. */
function containingEnd(window: QuietWindow, instantMs: number): number | null {
  if (window.days.length === 0) return null;
  const here = localParts(instantMs, window.timezone);
  let end: number | null = null;
  for (const k of [-1, 0]) {
    const d = shiftDate(here.year, here.month, here.day, k);
    if (!window.days.includes(d.weekday)) continue;
    const w = windowFrom(window, d.year, d.month, d.day);
    if (w.start <= instantMs && instantMs < w.end && (end === null || w.end > end)) end = w.end;
  }
  return end;
}

/**
 * null when `instantMs` is outside every quiet window; otherwise the instant
 * quiet ends (the wall-clock `end` on the right local date; for touching
 * windows, the end of the whole run; Infinity if it never ends). A window
 * running across midnight that started on a listed day counts the next
 * morning even when that day is not listed.
 */
export function quietUntil(window: QuietWindow, instantMs: number): number | null {
  let end = containingEnd(window, instantMs);
  if (end === null) return null;
  if (window.days.length === 7 && window.start === window.end) return Number.POSITIVE_INFINITY;
  for (let i = 0; i < 8; i++) {
    const next = containingEnd(window, end);
    if (next === null || next <= end) break;
    end = next;
  }
  return end;
}

/** True when `instantMs` is inside a quiet window. */
export function isQuiet(window: QuietWindow, instantMs: number): boolean {
  return quietUntil(window, instantMs) !== null;
}

/**
 * The start of the first quiet window that starts at or after `instantMs`
 * (so `instantMs` itself when it is exactly a start), or null when no day is
 * listed. A window that is empty on a DST day (e.g. 02:00–02:30 on
 * spring-forward day, both ends at 03:00) is passed over. While quiet, this is
 * the NEXT window's start, not the current one's.
 */
export function nextQuietStart(window: QuietWindow, instantMs: number): number | null {
  if (window.days.length === 0) return null;
  const here = localParts(instantMs, window.timezone);
  for (let k = 0; k <= 8; k++) {
    const d = shiftDate(here.year, here.month, here.day, k);
    if (!window.days.includes(d.weekday)) continue;
    const w = windowFrom(window, d.year, d.month, d.day);
    if (w.start >= instantMs && w.end > w.start) return w.start;
  }
  return null;
}
