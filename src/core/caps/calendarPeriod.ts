import { localParts, zonedTimeToInstant } from "../quietHours/zone";

export interface CalendarPeriod {
  startMs: number;
  endMs: number;
  /** the local date the period starts on, YYYY-MM-DD */
  id: string;
}

/**
 * The recipient-local day (from local midnight) or week (from Monday 00:00)
 * that an instant falls in; DST days are 23 or 25 hours long, as the clock says.
 */
export function calendarPeriod(type: "calendar_day" | "calendar_week", nowMs: number, zone: string): CalendarPeriod {
  const local = localParts(nowMs, zone);
  const back = type === "calendar_week" ? (local.weekday + 6) % 7 : 0;
  const length = type === "calendar_week" ? 7 : 1;
  const startMs = zonedTimeToInstant({ year: local.year, month: local.month, day: local.day - back, hour: 0, minute: 0 }, zone);
  const endMs = zonedTimeToInstant({ year: local.year, month: local.month, day: local.day - back + length, hour: 0, minute: 0 }, zone);
  const start = localParts(startMs, zone);
  const id = `${start.year}-${String(start.month).padStart(2, "0")}-${String(start.day).padStart(2, "0")}`;
  return { startMs, endMs, id };
}
