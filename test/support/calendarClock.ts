import { calendarPeriod } from "../../src/core/caps/calendarPeriod";
import { sleep } from "./redis";

/**
 * Waits, when the calendar period (day or week) current in `zone` ends less
 * than `marginMs` from now, until it has ended, and returns the end of the
 * period then current. A test that fills a calendar cap and checks what it
 * counts then does both in one period, wherever the clock stands when it
 * starts (a test begun a second before midnight in `zone` would see the cap
 * reset between its sends).
 */
export async function clearOfPeriodEnd(type: "calendar_day" | "calendar_week", zone: string, marginMs = 10_000): Promise<number> {
  const endMs = calendarPeriod(type, Date.now(), zone).endMs;
  const left = endMs - Date.now();
  if (left >= marginMs) return endMs;
  await sleep(left + 1_000);
  return calendarPeriod(type, Date.now(), zone).endMs;
}
