import assert from "node:assert/strict";
import { seededRandom } from "../../../bench/load/random";
import { QuietHoursError } from "../../../src/core/quietHours/errors";
import { parseQuietWindow, quietUntil } from "../../../src/core/quietHours/quietWindow";
import { releaseAt } from "../../../src/core/quietHours/jitter";

// the bench's seeded PRNG: the spread below is the same on every run
const seeded = seededRandom;

describe("core/quietHours/jitter", () => {
  const end = Date.UTC(2026, 2, 8, 12, 0); // 08:00 EDT, the end of a New York night

  it("spreads 1,000 releases of one boundary over [end, end + 900 s)", () => {
    const random = seeded(20260308);
    const releases = Array.from({ length: 1000 }, () => releaseAt(end, 900, random));
    for (const r of releases) {
      assert.ok(Number.isInteger(r));
      assert.ok(r >= end && r < end + 900_000, new Date(r).toISOString());
    }
    const min = Math.min(...releases);
    const max = Math.max(...releases);
    assert.ok(min - end < 10_000, `earliest ${min - end} ms after the end`);
    assert.ok(end + 900_000 - max < 10_000, `latest ${end + 900_000 - max} ms before the span's end`);
    const buckets = new Array<number>(10).fill(0);
    for (const r of releases) buckets[Math.floor((r - end) / 90_000)]++;
    for (const [i, n] of buckets.entries()) assert.ok(n >= 60 && n <= 140, `bucket ${i} (${i * 90}–${i * 90 + 90} s) has ${n}`);
    assert.ok(new Set(releases).size > 990, "releases are not bunched on a few instants");
  });

  it("jitter 0 releases at the end; random's extremes stay inside the span", () => {
    assert.equal(releaseAt(end, 0), end);
    assert.equal(releaseAt(end, 900, () => 0), end);
    assert.equal(releaseAt(end, 900, () => 0.999999999), end + 899_999);
    assert.equal(releaseAt(end, 900, () => 1), end + 899_999);
    assert.equal(releaseAt(end, 900, () => 0.5), end + 450_000);
    const r = releaseAt(end, 900);
    assert.ok(r >= end && r < end + 900_000);
  });

  it("refuses a negative or non-finite jitter, naming it", () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => releaseAt(end, bad), (err: unknown) =>
        err instanceof QuietHoursError && err.field === "jitter" && err.message.startsWith("jitter: "));
    }
  });

  it("with quietUntil: a msg held at 23:00 EST on 7 March leaves between 08:00 and 08:15 EDT", () => {
    const w = parseQuietWindow({ start: "21:00", end: "08:00", days: [0, 1, 2, 3, 4, 5, 6], timezone: "America/New_York" });
    const quietEnd = quietUntil(w, Date.UTC(2026, 2, 8, 4, 0));
    assert.equal(quietEnd, end);
    assert.equal(new Date(releaseAt(end, 900, () => 0.25)).toISOString(), "2026-03-08T12:03:45.000Z");
  });
});
