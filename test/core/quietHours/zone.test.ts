import assert from "node:assert/strict";
import { QuietHoursError } from "../../../src/core/quietHours/errors";
import { checkTimeZone, localParts, offsetMs, zonedTimeToInstant } from "../../../src/core/quietHours/zone";

const iso = (ms: number) => new Date(ms).toISOString();
const NY = "America/New_York";
const LONDON = "Europe/London";
const LORD_HOWE = "Australia/Lord_Howe";
const at = (zone: string, year: number, month: number, day: number, hour: number, minute: number) =>
  iso(zonedTimeToInstant({ year, month, day, hour, minute }, zone));
const clock = (ms: number, zone: string) => {
  const p = localParts(ms, zone);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${p.year}-${pad(p.month)}-${pad(p.day)} ${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)} w${p.weekday}`;
};

describe("core/quietHours/zone", () => {
  describe("checkTimeZone", () => {
    it("accepts IANA zones, fixing the case but keeping an alias as written", () => {
      assert.equal(checkTimeZone("America/New_York"), "America/New_York");
      assert.equal(checkTimeZone("america/new_york"), "America/New_York");
      assert.equal(checkTimeZone("utc"), "UTC");
      assert.equal(checkTimeZone("Asia/Kolkata"), "Asia/Kolkata"); // ICU would say Asia/Calcutta
      assert.equal(checkTimeZone("Australia/Lord_Howe"), "Australia/Lord_Howe");
    });

    it("names the unknown zone and the field", () => {
      assert.throws(() => checkTimeZone("Mars/Olympus"), (err: unknown) => {
        assert.ok(err instanceof QuietHoursError);
        assert.equal(err.field, "timezone");
        assert.equal(err.message, 'timezone: unknown time zone "Mars/Olympus"');
        return true;
      });
      assert.throws(() => checkTimeZone("Mars/Olympus", "msg.timezone"), { message: 'msg.timezone: unknown time zone "Mars/Olympus"' });
      assert.throws(() => checkTimeZone(""), { name: "QuietHoursError", message: /^timezone: expected an IANA time zone/ });
      assert.throws(() => checkTimeZone(5), { message: /^timezone: .*got number 5/ });
      assert.throws(() => checkTimeZone(undefined), { message: /^timezone: .*got nothing/ });
      assert.throws(() => localParts(0, "Mars/Olympus"), { message: 'timezone: unknown time zone "Mars/Olympus"' });
    });
  });

  describe("localParts", () => {
    it("reads the wall clock across New York's 2026 changes (EST -5 → EDT -4 on 8 March, back on 1 November)", () => {
      assert.equal(clock(Date.UTC(2026, 2, 8, 6, 59, 59, 999), NY), "2026-03-08 01:59:59 w0");
      assert.equal(clock(Date.UTC(2026, 2, 8, 7, 0), NY), "2026-03-08 03:00:00 w0");
      assert.equal(clock(Date.UTC(2026, 10, 1, 5, 30), NY), "2026-11-01 01:30:00 w0"); // EDT
      assert.equal(clock(Date.UTC(2026, 10, 1, 6, 30), NY), "2026-11-01 01:30:00 w0"); // EST, the repeat
      assert.equal(clock(Date.UTC(2026, 10, 1, 4, 59), NY), "2026-11-01 00:59:00 w0");
      assert.equal(clock(Date.UTC(2026, 2, 7, 4, 59), NY), "2026-03-06 23:59:00 w5");
    });

    it("reads London's 2026 changes (29 March 01:00 UTC → BST, 25 October 02:00 BST → 01:00 GMT)", () => {
      assert.equal(clock(Date.UTC(2026, 2, 29, 0, 59), LONDON), "2026-03-29 00:59:00 w0");
      assert.equal(clock(Date.UTC(2026, 2, 29, 1, 0), LONDON), "2026-03-29 02:00:00 w0");
      assert.equal(clock(Date.UTC(2026, 9, 25, 0, 59), LONDON), "2026-10-25 01:59:00 w0");
      assert.equal(clock(Date.UTC(2026, 9, 25, 1, 0), LONDON), "2026-10-25 01:00:00 w0");
    });

    it("reads odd offsets: Kathmandu +05:45, Kolkata +05:30, Lord Howe's 30-minute DST", () => {
      assert.equal(clock(Date.UTC(2026, 0, 1, 0, 0), "Asia/Kathmandu"), "2026-01-01 05:45:00 w4");
      assert.equal(clock(Date.UTC(2026, 0, 1, 0, 0), "Asia/Kolkata"), "2026-01-01 05:30:00 w4");
      // DST ends 2026-04-05 02:00 (+11) → 01:30 (+10:30); starts 2026-10-04 02:00 (+10:30) → 02:30 (+11)
      assert.equal(clock(Date.UTC(2026, 3, 4, 14, 59), LORD_HOWE), "2026-04-05 01:59:00 w0");
      assert.equal(clock(Date.UTC(2026, 3, 4, 15, 0), LORD_HOWE), "2026-04-05 01:30:00 w0");
      assert.equal(clock(Date.UTC(2026, 9, 3, 15, 29), LORD_HOWE), "2026-10-04 01:59:00 w0");
      assert.equal(clock(Date.UTC(2026, 9, 3, 15, 30), LORD_HOWE), "2026-10-04 02:30:00 w0");
      assert.equal(offsetMs(Date.UTC(2026, 0, 1), "Asia/Kathmandu"), (5 * 60 + 45) * 60_000);
      assert.equal(offsetMs(Date.UTC(2026, 3, 4, 14, 59), LORD_HOWE), 11 * 3_600_000);
      assert.equal(offsetMs(Date.UTC(2026, 3, 4, 15, 0), LORD_HOWE), 10.5 * 3_600_000);
      assert.equal(offsetMs(Date.UTC(2026, 6, 1), NY), -4 * 3_600_000);
    });

    it("refuses a non-finite instant", () => {
      assert.throws(() => localParts(Number.NaN, NY), RangeError);
    });
  });

  describe("zonedTimeToInstant", () => {
    it("places ordinary times on the offset in force", () => {
      assert.equal(at(NY, 2026, 1, 15, 8, 0), "2026-01-15T13:00:00.000Z");
      assert.equal(at(NY, 2026, 7, 15, 8, 0), "2026-07-15T12:00:00.000Z");
      assert.equal(at("Asia/Kathmandu", 2026, 6, 16, 8, 0), "2026-06-16T02:15:00.000Z");
      assert.equal(at("Asia/Kolkata", 2026, 6, 16, 8, 0), "2026-06-16T02:30:00.000Z");
      assert.equal(at("UTC", 2026, 6, 16, 8, 0), "2026-06-16T08:00:00.000Z");
    });

    it("maps a time in the spring-forward gap to the first instant after it (the gap's end)", () => {
      assert.equal(at(NY, 2026, 3, 8, 1, 59), "2026-03-08T06:59:00.000Z");
      assert.equal(at(NY, 2026, 3, 8, 2, 0), "2026-03-08T07:00:00.000Z"); // 03:00 EDT
      assert.equal(at(NY, 2026, 3, 8, 2, 30), "2026-03-08T07:00:00.000Z");
      assert.equal(at(NY, 2026, 3, 8, 2, 59), "2026-03-08T07:00:00.000Z");
      assert.equal(at(NY, 2026, 3, 8, 3, 0), "2026-03-08T07:00:00.000Z");
      assert.equal(at(NY, 2026, 3, 8, 3, 1), "2026-03-08T07:01:00.000Z");
      assert.equal(at(LONDON, 2026, 3, 29, 1, 30), "2026-03-29T01:00:00.000Z"); // 02:00 BST
      assert.equal(at(LONDON, 2026, 3, 29, 0, 59), "2026-03-29T00:59:00.000Z");
      // Lord Howe's 30-minute gap, 02:00–02:30 on 2026-10-04
      assert.equal(at(LORD_HOWE, 2026, 10, 4, 1, 59), "2026-10-03T15:29:00.000Z");
      assert.equal(at(LORD_HOWE, 2026, 10, 4, 2, 15), "2026-10-03T15:30:00.000Z");
      assert.equal(at(LORD_HOWE, 2026, 10, 4, 2, 30), "2026-10-03T15:30:00.000Z");
      assert.equal(clock(zonedTimeToInstant({ year: 2026, month: 10, day: 4, hour: 2, minute: 15 }, LORD_HOWE), LORD_HOWE), "2026-10-04 02:30:00 w0");
      // a whole skipped day: Samoa jumped from 29 to 31 December 2011
      assert.equal(at("Pacific/Apia", 2011, 12, 30, 12, 0), "2011-12-30T10:00:00.000Z");
    });

    it("maps a repeated (fall-back) time to its first occurrence", () => {
      assert.equal(at(NY, 2026, 11, 1, 0, 59), "2026-11-01T04:59:00.000Z");
      assert.equal(at(NY, 2026, 11, 1, 1, 0), "2026-11-01T05:00:00.000Z"); // EDT, not 06:00Z EST
      assert.equal(at(NY, 2026, 11, 1, 1, 30), "2026-11-01T05:30:00.000Z");
      assert.equal(at(NY, 2026, 11, 1, 1, 59), "2026-11-01T05:59:00.000Z");
      assert.equal(at(NY, 2026, 11, 1, 2, 0), "2026-11-01T07:00:00.000Z"); // only once, EST
      assert.equal(at(LONDON, 2026, 10, 25, 1, 30), "2026-10-25T00:30:00.000Z"); // BST
      assert.equal(at(LONDON, 2026, 10, 25, 2, 0), "2026-10-25T02:00:00.000Z");
      assert.equal(at(LORD_HOWE, 2026, 4, 5, 1, 45), "2026-04-04T14:45:00.000Z"); // +11
      assert.equal(at(LORD_HOWE, 2026, 4, 5, 2, 0), "2026-04-04T15:30:00.000Z"); // +10:30, only once
    });

    it("round-trips every quarter hour around each 2026 change: the result reads the same clock, at or before the instant", () => {
      const spans: [string, number][] = [
        [NY, Date.UTC(2026, 2, 7)], [NY, Date.UTC(2026, 9, 31)],
        [LONDON, Date.UTC(2026, 2, 28)], [LONDON, Date.UTC(2026, 9, 24)],
        [LORD_HOWE, Date.UTC(2026, 3, 3)], [LORD_HOWE, Date.UTC(2026, 9, 2)],
        ["Asia/Kathmandu", Date.UTC(2026, 5, 1)],
      ];
      for (const [zone, from] of spans) {
        let repeats = 0;
        for (let t = from; t < from + 3 * 86_400_000; t += 15 * 60_000) {
          const p = localParts(t, zone);
          const back = zonedTimeToInstant(p, zone);
          assert.equal(clock(back, zone), clock(t, zone), `${zone} ${iso(t)}`);
          assert.ok(back <= t, `${zone} ${iso(t)} → ${iso(back)}`);
          if (back < t) repeats++;
        }
        const expected = zone === NY || zone === LONDON ? 4 : zone === LORD_HOWE ? 2 : 0;
        // the repeated hour (half hour at Lord Howe) is seen twice only on the fall-back side
        const fallBack = (zone === NY && from === Date.UTC(2026, 9, 31)) || (zone === LONDON && from === Date.UTC(2026, 9, 24))
          || (zone === LORD_HOWE && from === Date.UTC(2026, 3, 3));
        assert.equal(repeats, fallBack ? expected : 0, `${zone} from ${iso(from)}`);
      }
    });

    it("rolls over out-of-range fields like Date.UTC and refuses fractions", () => {
      assert.equal(at("UTC", 2026, 12, 32, 0, 0), "2027-01-01T00:00:00.000Z");
      assert.equal(at(NY, 2026, 3, 0, 8, 0), "2026-02-28T13:00:00.000Z");
      assert.equal(iso(zonedTimeToInstant({ year: 2026, month: 1, day: 1, hour: 0, minute: 0, second: 30 }, "UTC")), "2026-01-01T00:00:30.000Z");
      assert.throws(() => zonedTimeToInstant({ year: 2026, month: 1, day: 1, hour: 1.5, minute: 0 }, NY), RangeError);
      assert.throws(() => zonedTimeToInstant({ year: 2026, month: 1, day: 1, hour: 1, minute: 0 }, "Mars/Olympus"), { name: "QuietHoursError" });
    });
  });
});
