import assert from "node:assert/strict";

/**
 * The three recipients of the quiet-hours steps in examples/quiet-hours.json
 * and examples/push-governor.json: quiet 22:00–06:00 in their own zones,
 * which are 8 h apart and keep no summer time (Tokyo UTC+9, Lagos UTC+1,
 * Phoenix UTC−7). An 8-hour window in each of three zones 8 h apart covers
 * the day exactly once: in UTC, Tokyo is quiet over [13:00, 21:00), Lagos
 * over [21:00, 05:00), Phoenix over [05:00, 13:00). So at any instant exactly
 * one of them is held, and which one is computed here from the fixed offsets,
 * without the package's zone code.
 */
export const THREE_ZONES = [
  { recipient: "aiko", zone: "Asia/Tokyo", offsetHours: 9 },
  { recipient: "ngozi", zone: "Africa/Lagos", offsetHours: 1 },
  { recipient: "pat", zone: "America/Phoenix", offsetHours: -7 },
] as const;

export const QUIET = { start: "22:00", end: "06:00", startHour: 22, endHour: 6 } as const;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The local hour of `instant` in `zone`, as the platform's tz database says. */
function intlHour(instant: number, zone: string): number {
  return Number(new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", hourCycle: "h23" }).format(instant));
}

/**
 * Who of the three is in quiet hours at `instant`, and the instant their
 * window ends (06:00 local). Fails when the tz database no longer gives one
 * of the zones the offset this reasoning rests on.
 */
export function quietRecipientAt(instant: number): { recipient: string; zone: string; endsAt: number } {
  const quiet = THREE_ZONES.flatMap((z) => {
    const local = instant + z.offsetHours * HOUR;
    const hour = new Date(local).getUTCHours();
    assert.equal(intlHour(instant, z.zone), hour, `${z.zone} is no longer UTC${z.offsetHours >= 0 ? "+" : ""}${z.offsetHours}`);
    if (hour >= QUIET.endHour && hour < QUIET.startHour) return [];
    const localMidnight = Math.floor(local / DAY) * DAY;
    const localEnd = localMidnight + QUIET.endHour * HOUR + (hour >= QUIET.startHour ? DAY : 0);
    return [{ recipient: z.recipient, zone: z.zone, endsAt: localEnd - z.offsetHours * HOUR }];
  });
  assert.equal(quiet.length, 1, `exactly one of the three zones is in quiet hours at ${new Date(instant).toISOString()}`);
  return quiet[0];
}

/**
 * Waits, when a window boundary (05:00, 13:00 or 21:00 UTC) is less than
 * `marginMs` away, until it has passed: the msgs a test sends next are then
 * judged on the same side of it as the test's own answer.
 */
export async function clearOfBoundary(marginMs = 15_000): Promise<void> {
  const now = Date.now();
  if (quietRecipientAt(now).recipient === quietRecipientAt(now + marginMs).recipient) return;
  const boundary = quietRecipientAt(now).endsAt;
  await new Promise((r) => setTimeout(r, boundary - now + 1_000));
}
