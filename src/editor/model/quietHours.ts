import { isAbsent } from "./lists";

/** The quiet-hours dialog's pure parts: times, weekdays, zones, and how the window reads. */
export const ALL_DAYS = [0, 1, 2, 3, 4, 5, 6] as const;
/** shown Monday first; the values stay 0 = Sunday … 6 = Saturday */
export const DAY_ORDER = [1, 2, 3, 4, 5, 6, 0] as const;
const TIME = /^(\d{1,2}):(\d{2})$/;

export function isTimeOfDay(value: unknown): value is string {
  const m = typeof value === "string" ? TIME.exec(value) : null;
  return m !== null && Number(m[1]) <= 23 && Number(m[2]) <= 59;
}

export function minutesOf(time: string): number {
  const m = TIME.exec(time);
  return m ? Number(m[1]) * 60 + Number(m[2]) : Number.NaN;
}

/** The days a flow may hold: an array of 0–6 (numbers or numeric strings), or absent; the bad item when not. */
export function badDay(value: unknown): { item: unknown } | { notArray: true } | null {
  if (isAbsent(value)) return null;
  if (!Array.isArray(value)) return { notArray: true };
  for (const item of value) {
    const d: unknown = typeof item === "string" && item.trim() !== "" ? Number(item) : item;
    if (typeof d !== "number" || !(ALL_DAYS as readonly number[]).includes(d)) return { item };
  }
  return null;
}

export function daysOf(value: unknown): number[] {
  if (!Array.isArray(value)) return [...ALL_DAYS];
  return value.map(Number).filter((d) => (ALL_DAYS as readonly number[]).includes(d));
}

/** A zone the JavaScript engine knows (the runtime checks the same way, with Intl). */
export function isKnownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat(undefined, { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** Which sentence describes the window: a catalog key under quiet-hours-gate.window. */
export function windowShape(start: string, end: string): "badTimes" | "wholeDay" | "acrossMidnight" | "sameDay" {
  if (!isTimeOfDay(start) || !isTimeOfDay(end)) return "badTimes";
  if (minutesOf(start) === minutesOf(end)) return "wholeDay";
  return minutesOf(start) > minutesOf(end) ? "acrossMidnight" : "sameDay";
}

/** The days part of the node's label: "" every day, "weekdays", or the ticked days in order. */
export function daysKind(days: unknown): { kind: "every" | "none" | "weekdays" } | { kind: "list"; days: number[] } {
  const list = daysOf(days);
  if (list.length === 7) return { kind: "every" };
  if (list.length === 0) return { kind: "none" };
  if (list.length === 5 && [1, 2, 3, 4, 5].every((d) => list.includes(d))) return { kind: "weekdays" };
  return { kind: "list", days: DAY_ORDER.filter((d) => list.includes(d)) };
}
