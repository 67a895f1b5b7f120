import assert from "node:assert/strict";
import { QuietHoursError } from "../../../src/core/quietHours/errors";
import { QuietWindow, isQuiet, nextQuietStart, parseQuietWindow, quietUntil } from "../../../src/core/quietHours/quietWindow";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const ALL_DAYS = [0, 1, 2, 3, 4, 5, 6];
const win = (start: string, end: string, timezone: string, days = ALL_DAYS): QuietWindow =>
  parseQuietWindow({ start, end, days, timezone });
const until = (w: QuietWindow, utc: string) => iso(quietUntil(w, Date.parse(utc)));
const next = (w: QuietWindow, utc: string) => iso(nextQuietStart(w, Date.parse(utc)));

function fieldError(field: string, message?: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof QuietHoursError, String(err));
    assert.equal(err.field, field);
    assert.ok(err.message.startsWith(`${field}: `), err.message);
    if (message) assert.match(err.message, message);
    return true;
  };
}

describe("core/quietHours/quietWindow", () => {
  describe("America/New_York 2026 (EST → EDT 8 March 02:00, EDT → EST 1 November 02:00)", () => {
    const w = win("21:00", "08:00", "America/New_York");

    it("ends a night that spans spring-forward at 08:00 EDT (12:00Z), not 08:00 EST", () => {
      assert.equal(until(w, "2026-03-08T04:00:00.000Z"), "2026-03-08T12:00:00.000Z"); // 2026-03-07 23:00 EST
      assert.equal(until(w, "2026-03-08T06:59:00.000Z"), "2026-03-08T12:00:00.000Z"); // 01:59 EST
      assert.equal(until(w, "2026-03-08T07:00:00.000Z"), "2026-03-08T12:00:00.000Z"); // 03:00 EDT
      assert.equal(until(w, "2026-03-08T11:59:59.999Z"), "2026-03-08T12:00:00.000Z");
      assert.equal(until(w, "2026-03-08T12:00:00.000Z"), null); // half open: 08:00 sends
    });

    it("ends a night that spans fall-back at 08:00 EST (13:00Z), not 08:00 EDT", () => {
      assert.equal(until(w, "2026-11-01T03:00:00.000Z"), "2026-11-01T13:00:00.000Z"); // 2026-10-31 23:00 EDT
      assert.equal(until(w, "2026-11-01T05:30:00.000Z"), "2026-11-01T13:00:00.000Z"); // 01:30 EDT
      assert.equal(until(w, "2026-11-01T06:30:00.000Z"), "2026-11-01T13:00:00.000Z"); // 01:30 EST
      assert.equal(until(w, "2026-11-01T12:00:00.000Z"), "2026-11-01T13:00:00.000Z"); // 07:00 EST
      assert.equal(until(w, "2026-11-01T13:00:00.000Z"), null);
    });

    it("starts at 21:00 local on each side of a change", () => {
      assert.equal(until(w, "2026-03-08T01:59:59.999Z"), null); // 2026-03-07 20:59:59 EST
      assert.equal(until(w, "2026-03-08T02:00:00.000Z"), "2026-03-08T12:00:00.000Z");
      assert.equal(until(w, "2026-03-09T00:59:59.999Z"), null); // 2026-03-08 20:59:59 EDT
      assert.equal(until(w, "2026-03-09T01:00:00.000Z"), "2026-03-09T12:00:00.000Z");
      assert.equal(until(w, "2026-11-02T01:59:59.999Z"), null); // 2026-11-01 20:59:59 EST
      assert.equal(until(w, "2026-11-02T02:00:00.000Z"), "2026-11-02T13:00:00.000Z");
      assert.equal(next(w, "2026-03-08T12:00:00.000Z"), "2026-03-09T01:00:00.000Z");
      assert.equal(next(w, "2026-03-07T12:00:00.000Z"), "2026-03-08T02:00:00.000Z"); // quiet now: the next one
      assert.equal(next(w, "2026-11-01T13:00:00.000Z"), "2026-11-02T02:00:00.000Z");
      assert.equal(next(w, "2026-03-08T02:00:00.000Z"), "2026-03-08T02:00:00.000Z"); // exactly a start
    });

    it("puts an end inside the spring-forward gap at 03:00 EDT", () => {
      const gapEnd = win("22:00", "02:30", "America/New_York");
      assert.equal(until(gapEnd, "2026-03-08T06:00:00.000Z"), "2026-03-08T07:00:00.000Z"); // 01:00 EST → 03:00 EDT
      assert.equal(until(gapEnd, "2026-03-08T07:00:00.000Z"), null);
      assert.equal(until(gapEnd, "2026-03-09T06:00:00.000Z"), "2026-03-09T06:30:00.000Z"); // next day: 02:30 EDT
    });

    it("puts a start inside the spring-forward gap at 03:00 EDT, and skips a window the gap swallows", () => {
      const gapStart = win("02:30", "05:00", "America/New_York");
      assert.equal(until(gapStart, "2026-03-08T06:59:00.000Z"), null); // 01:59 EST
      assert.equal(until(gapStart, "2026-03-08T07:00:00.000Z"), "2026-03-08T09:00:00.000Z"); // 03:00 → 05:00 EDT
      assert.equal(next(gapStart, "2026-03-08T00:00:00.000Z"), "2026-03-08T07:00:00.000Z");

      const swallowed = win("02:00", "02:30", "America/New_York");
      assert.equal(until(swallowed, "2026-03-08T07:00:00.000Z"), null); // both ends at 03:00: empty that day
      assert.equal(next(swallowed, "2026-03-08T05:00:00.000Z"), "2026-03-09T06:00:00.000Z"); // 2026-03-09 02:00 EDT
      assert.equal(until(swallowed, "2026-03-07T07:15:00.000Z"), "2026-03-07T07:30:00.000Z"); // the day before: 02:15 EST
    });

    it("ends at the FIRST 01:30 on fall-back day; the repeated 01:15 EST is not quiet", () => {
      const w2 = win("22:00", "01:30", "America/New_York");
      assert.equal(until(w2, "2026-11-01T05:00:00.000Z"), "2026-11-01T05:30:00.000Z"); // 01:00 EDT
      assert.equal(until(w2, "2026-11-01T06:15:00.000Z"), null); // 01:15 EST, after the window ended
    });
  });

  describe("Europe/London 2026 (29 March 01:00 UTC → BST, 25 October 02:00 BST → 01:00 GMT)", () => {
    const w = win("21:00", "08:00", "Europe/London");

    it("ends at 08:00 local on both change days", () => {
      assert.equal(until(w, "2026-03-28T23:00:00.000Z"), "2026-03-29T07:00:00.000Z"); // 08:00 BST
      assert.equal(until(w, "2026-03-29T06:59:59.999Z"), "2026-03-29T07:00:00.000Z");
      assert.equal(until(w, "2026-03-29T07:00:00.000Z"), null);
      assert.equal(until(w, "2026-10-24T22:00:00.000Z"), "2026-10-25T08:00:00.000Z"); // 23:00 BST → 08:00 GMT
      assert.equal(until(w, "2026-10-25T07:59:59.999Z"), "2026-10-25T08:00:00.000Z");
      assert.equal(until(w, "2026-10-25T08:00:00.000Z"), null);
      assert.equal(until(w, "2026-03-29T19:59:59.999Z"), null); // 20:59:59 BST
      assert.equal(until(w, "2026-03-29T20:00:00.000Z"), "2026-03-30T07:00:00.000Z");
    });

    it("puts an end in the skipped hour at 02:00 BST and an end in the repeated hour on its first pass", () => {
      assert.equal(until(win("23:00", "01:30", "Europe/London"), "2026-03-29T00:45:00.000Z"), "2026-03-29T01:00:00.000Z");
      const repeated = win("01:00", "01:30", "Europe/London");
      assert.equal(until(repeated, "2026-10-25T00:15:00.000Z"), "2026-10-25T00:30:00.000Z"); // 01:15 BST
      assert.equal(until(repeated, "2026-10-25T01:15:00.000Z"), null); // 01:15 GMT, the second pass
    });
  });

  describe("across midnight, by the day the window starts on", () => {
    // 2026-01-09 is a Friday. Window 22:00–06:00, Monday to Friday.
    const weekdays = win("22:00", "06:00", "UTC", [1, 2, 3, 4, 5]);

    it("Friday 23:00 is quiet until Saturday 06:00, and Saturday 02:00 too (the window started Friday)", () => {
      assert.equal(until(weekdays, "2026-01-09T23:00:00.000Z"), "2026-01-10T06:00:00.000Z");
      assert.equal(until(weekdays, "2026-01-10T02:00:00.000Z"), "2026-01-10T06:00:00.000Z");
    });

    it("Saturday 23:00 and Sunday 02:00 are not quiet (Saturday is not listed)", () => {
      assert.equal(until(weekdays, "2026-01-10T23:00:00.000Z"), null);
      assert.equal(until(weekdays, "2026-01-11T02:00:00.000Z"), null);
    });

    it("Sunday 23:00 and Monday 02:00 are not quiet (Sunday is not listed); Monday 23:00 is", () => {
      assert.equal(until(weekdays, "2026-01-11T23:00:00.000Z"), null);
      assert.equal(until(weekdays, "2026-01-12T02:00:00.000Z"), null);
      assert.equal(until(weekdays, "2026-01-12T23:00:00.000Z"), "2026-01-13T06:00:00.000Z");
      assert.equal(next(weekdays, "2026-01-10T12:00:00.000Z"), "2026-01-12T22:00:00.000Z");
    });

    it("with Sunday listed, Sunday 23:00 and Monday 02:00 are quiet until Monday 06:00; Sunday 02:00 still is not", () => {
      const sunToFri = win("22:00", "06:00", "UTC", [0, 1, 2, 3, 4, 5]);
      assert.equal(until(sunToFri, "2026-01-11T23:00:00.000Z"), "2026-01-12T06:00:00.000Z");
      assert.equal(until(sunToFri, "2026-01-12T02:00:00.000Z"), "2026-01-12T06:00:00.000Z");
      assert.equal(until(sunToFri, "2026-01-11T02:00:00.000Z"), null);
    });

    it("takes the day of the week in the window's zone, not UTC's", () => {
      const la = win("22:00", "06:00", "America/Los_Angeles", [1, 2, 3, 4, 5]);
      // Friday 23:00 PST is Saturday 07:00Z: quiet until Saturday 06:00 PST
      assert.equal(until(la, "2026-01-10T07:00:00.000Z"), "2026-01-10T14:00:00.000Z");
      // Sunday 22:30 PST is Monday 06:30Z: Sunday is not listed
      assert.equal(until(la, "2026-01-12T06:30:00.000Z"), null);
    });
  });

  describe("odd offsets", () => {
    it("Asia/Kathmandu (+05:45): 21:00–08:00 ends at 02:15Z; Asia/Kolkata (+05:30) at 02:30Z", () => {
      assert.equal(until(win("21:00", "08:00", "Asia/Kathmandu"), "2026-06-15T16:15:00.000Z"), "2026-06-16T02:15:00.000Z");
      assert.equal(until(win("21:00", "08:00", "Asia/Kathmandu"), "2026-06-15T15:14:59.999Z"), null); // 20:59:59
      assert.equal(until(win("21:00", "08:00", "Asia/Kolkata"), "2026-06-15T16:15:00.000Z"), "2026-06-16T02:30:00.000Z");
    });

    it("Australia/Lord_Howe: ends at 08:00 local either side of both 30-minute shifts", () => {
      const w = win("21:00", "08:00", "Australia/Lord_Howe");
      // DST ends 2026-04-05 02:00 (+11) → 01:30 (+10:30)
      assert.equal(until(w, "2026-04-03T12:00:00.000Z"), "2026-04-03T21:00:00.000Z"); // 04-04 08:00 +11
      assert.equal(until(w, "2026-04-04T12:00:00.000Z"), "2026-04-04T21:30:00.000Z"); // 04-05 08:00 +10:30
      // DST starts 2026-10-04 02:00 (+10:30) → 02:30 (+11)
      assert.equal(until(w, "2026-10-02T12:30:00.000Z"), "2026-10-02T21:30:00.000Z"); // 10-03 08:00 +10:30
      assert.equal(until(w, "2026-10-03T12:30:00.000Z"), "2026-10-03T21:00:00.000Z"); // 10-04 08:00 +11
    });

    it("Australia/Lord_Howe: a boundary inside the 30-minute gap falls on 02:30", () => {
      const endInGap = win("22:00", "02:15", "Australia/Lord_Howe");
      assert.equal(until(endInGap, "2026-10-03T14:30:00.000Z"), "2026-10-03T15:30:00.000Z"); // 01:00 +10:30 → 02:30 +11
      const startInGap = win("02:10", "04:00", "Australia/Lord_Howe");
      assert.equal(until(startInGap, "2026-10-03T15:29:00.000Z"), null); // 01:59
      assert.equal(until(startInGap, "2026-10-03T15:30:00.000Z"), "2026-10-03T17:00:00.000Z"); // 02:30 → 04:00 +11
    });
  });

  describe("same-day and whole-day windows", () => {
    it("12:00–13:00 is quiet only within the day", () => {
      const lunch = win("12:00", "13:00", "Europe/London"); // June: BST
      assert.equal(until(lunch, "2026-06-15T10:59:59.999Z"), null);
      assert.equal(until(lunch, "2026-06-15T11:00:00.000Z"), "2026-06-15T12:00:00.000Z");
      assert.equal(until(lunch, "2026-06-15T11:30:00.000Z"), "2026-06-15T12:00:00.000Z");
      assert.equal(until(lunch, "2026-06-15T12:00:00.000Z"), null);
      assert.equal(until(lunch, "2026-06-15T22:30:00.000Z"), null);
      assert.equal(isQuiet(lunch, Date.parse("2026-06-15T11:30:00.000Z")), true);
      assert.equal(next(lunch, "2026-06-15T12:00:00.000Z"), "2026-06-16T11:00:00.000Z");
    });

    it("start == end is 24 h of wall clock from start on a listed day", () => {
      const wednesday = win("09:00", "09:00", "UTC", [3]); // 2026-01-14 is a Wednesday
      assert.equal(until(wednesday, "2026-01-14T08:59:59.999Z"), null);
      assert.equal(until(wednesday, "2026-01-14T09:00:00.000Z"), "2026-01-15T09:00:00.000Z");
      assert.equal(until(wednesday, "2026-01-15T08:59:00.000Z"), "2026-01-15T09:00:00.000Z");
      assert.equal(until(wednesday, "2026-01-15T09:00:00.000Z"), null);
      // on spring-forward Sunday in New York the whole day is 23 h: 00:00 EST → 00:00 EDT
      assert.equal(until(win("00:00", "00:00", "America/New_York", [0]), "2026-03-08T12:00:00.000Z"), "2026-03-09T04:00:00.000Z");
    });

    it("touching whole-day windows make one quiet run; all days whole-day never ends", () => {
      const weekend = win("00:00", "00:00", "UTC", [6, 0]);
      assert.equal(until(weekend, "2026-01-10T12:00:00.000Z"), "2026-01-12T00:00:00.000Z"); // Saturday → Monday 00:00
      assert.equal(until(weekend, "2026-01-11T12:00:00.000Z"), "2026-01-12T00:00:00.000Z");
      assert.equal(quietUntil(win("07:00", "07:00", "UTC"), Date.parse("2026-01-10T12:00:00.000Z")), Number.POSITIVE_INFINITY);
    });

    it("no days listed: never quiet", () => {
      const never = win("21:00", "08:00", "UTC", []);
      assert.equal(until(never, "2026-01-10T23:00:00.000Z"), null);
      assert.equal(next(never, "2026-01-10T12:00:00.000Z"), null);
    });
  });

  describe("parseQuietWindow", () => {
    it("normalises times, days and the zone", () => {
      assert.deepEqual(parseQuietWindow({ start: "8:00", end: "21:05", days: [5, 1, 1, "3"], timezone: "europe/london" }),
        { start: "08:00", end: "21:05", days: [1, 3, 5], timezone: "Europe/London" });
    });

    it("fills what is left out from defaults (a partial msg.quietHours under the gate's window)", () => {
      const defaults = { start: "21:00", end: "08:00", days: ALL_DAYS, timezone: "UTC" };
      assert.deepEqual(parseQuietWindow({ start: "22:00", timezone: "Asia/Kathmandu" }, { defaults }),
        { start: "22:00", end: "08:00", days: ALL_DAYS, timezone: "Asia/Kathmandu" });
      assert.deepEqual(parseQuietWindow(undefined, { defaults }), defaults);
    });

    it("names the field: start, end, days, timezone", () => {
      const ok = { start: "21:00", end: "08:00", days: ALL_DAYS, timezone: "UTC" };
      assert.throws(() => parseQuietWindow({ ...ok, start: "25:00" }), fieldError("start", /"25:00" is not a time of day/));
      assert.throws(() => parseQuietWindow({ ...ok, start: "8am" }), fieldError("start", /"8am"/));
      assert.throws(() => parseQuietWindow({ ...ok, start: "12:60" }), fieldError("start"));
      assert.throws(() => parseQuietWindow({ ...ok, start: 8 }), fieldError("start", /got number 8/));
      assert.throws(() => parseQuietWindow({ ...ok, end: "8am" }), fieldError("end", /"8am"/));
      assert.throws(() => parseQuietWindow({ ...ok, end: "24:00" }), fieldError("end"));
      assert.throws(() => parseQuietWindow({ ...ok, days: [1, 7] }), fieldError("days", /7 is not a day of the week/));
      assert.throws(() => parseQuietWindow({ ...ok, days: [-1] }), fieldError("days"));
      assert.throws(() => parseQuietWindow({ ...ok, days: [1.5] }), fieldError("days"));
      assert.throws(() => parseQuietWindow({ ...ok, days: "1,2" }), fieldError("days"));
      assert.throws(() => parseQuietWindow({ ...ok, timezone: "Mars/Olympus" }),
        fieldError("timezone", /^timezone: unknown time zone "Mars\/Olympus"$/));
      assert.throws(() => parseQuietWindow({ end: "08:00", days: ALL_DAYS, timezone: "UTC" }), fieldError("start", /got nothing/));
      assert.throws(() => parseQuietWindow("21:00-08:00"), fieldError("quietHours"));
    });

    it("prefixes field names with the object's name when given", () => {
      assert.throws(() => parseQuietWindow({ start: "8am" }, { field: "msg.quietHours" }), fieldError("msg.quietHours.start"));
      assert.throws(() => parseQuietWindow([], { field: "msg.quietHours" }), fieldError("msg.quietHours"));
    });
  });
});
