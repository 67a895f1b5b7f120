import assert from "node:assert/strict";
import { applicableCaps } from "../../src/core/caps/applicableCaps";
import { calendarPeriod } from "../../src/core/caps/calendarPeriod";
import { DEFAULT_CHANNELS } from "../../src/core/channels";
import { validateRules } from "../../src/core/schema/validateRules";
import { parseSend } from "../../src/core/send";

const iso = (ms: number) => new Date(ms).toISOString();

describe("core/calendarPeriod", () => {
  it("spans the local day from local midnight, also on DST change days", () => {
    const ny = calendarPeriod("calendar_day", Date.UTC(2026, 2, 8, 15), "America/New_York");
    assert.deepEqual([iso(ny.startMs), iso(ny.endMs), ny.id], ["2026-03-08T05:00:00.000Z", "2026-03-09T04:00:00.000Z", "2026-03-08"]);
    assert.equal(ny.endMs - ny.startMs, 23 * 3600_000);
    const ktm = calendarPeriod("calendar_day", Date.UTC(2026, 10, 30, 20), "Asia/Kathmandu");
    assert.deepEqual([iso(ktm.startMs), ktm.id], ["2026-11-30T18:15:00.000Z", "2026-12-01"]);
  });

  it("spans the local week from Monday 00:00", () => {
    // Sunday 2026-11-29 23:30 in London is still the week of Monday 2026-11-23
    const week = calendarPeriod("calendar_week", Date.UTC(2026, 10, 29, 23, 30), "Europe/London");
    assert.deepEqual([iso(week.startMs), iso(week.endMs), week.id], ["2026-11-23T00:00:00.000Z", "2026-11-30T00:00:00.000Z", "2026-11-23"]);
  });

  it("gives a calendar cap one counter, the period of the send's own zone, and a reset at the period's end", () => {
    const rules = validateRules([{ id: "daily", scope: "global", max_count: 2, window_seconds: 86400, window_type: "calendar_day" }]);
    const send = parseSend({ recipient: "r", channel: "sms", messageId: "m", timezone: "Asia/Tokyo" }, { channels: DEFAULT_CHANNELS, defaultOrg: "o", requireTier: false });
    const [today] = applicableCaps(rules, send, "fc", "r", { nowMs: Date.UTC(2026, 10, 30, 14, 59), defaultZone: "UTC" });
    const [tomorrow] = applicableCaps(rules, send, "fc", "r", { nowMs: Date.UTC(2026, 10, 30, 15, 0), defaultZone: "UTC" });
    assert.deepEqual([today?.key, today?.field], ["fc:{o|r}:c", "daily"]);
    assert.deepEqual([tomorrow?.key, tomorrow?.field], ["fc:{o|r}:c", "daily"]);
    assert.equal(iso(today?.startMs ?? 0), "2026-11-29T15:00:00.000Z");
    assert.equal(iso(today?.resetAt ?? 0), "2026-11-30T15:00:00.000Z");
    assert.equal(iso(tomorrow?.startMs ?? 0), "2026-11-30T15:00:00.000Z");
  });
});
