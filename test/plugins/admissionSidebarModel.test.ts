import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../support/nodeRedProcess";

interface Bar { t: number; allowed: number; skipped: number; deferred: number; errors: number }
interface SidebarModel {
  summarize(gate: unknown, now: number, windowMs: number, bucketMs: number): {
    allowed: number; skipped: number; deferred: number; errors: number; failOpen: number; held: number; wouldRefuse: number;
    skippedBy: { reason: string; count: number }[]; bars: Bar[];
  };
  totals(gate: unknown): Record<string, number>;
  formatSeconds(seconds: number | null): string;
  usageRows(body: unknown): { id: string; shadow: boolean; fraction: number; full: boolean; retry: number | null; scope: string }[];
  refusal(status: number, body: unknown): string;
}

// the editor script, loaded as Node loads it (it exports its pure part when `module` exists)
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { model } = require(join(ROOT, "resources", "admission-sidebar.js")) as { model: SidebarModel };

const bucket = (t: number, counts: Partial<Bar> & { skippedBy?: Record<string, number>; failOpen?: number; held?: number; wouldRefuse?: number }) => ({
  t, allowed: 0, skipped: 0, deferred: 0, errors: 0, failOpen: 0, held: 0, wouldRefuse: 0, skippedBy: {}, ...counts,
});

describe("editor plugin: the Admission sidebar's model", () => {
  const now = 1_000_000_005_000; // 5 s into a 10 s bucket

  it("sums the buckets of the last five minutes into 30 bars, oldest first, and ranks skip reasons", () => {
    const newest = now - 5_000;
    const gate = {
      recent: [
        bucket(newest - 310_000, { allowed: 99 }), // older than five minutes: left out
        bucket(newest - 290_000, { allowed: 1, skipped: 2, skippedBy: { opted_out: 2 } }),
        bucket(newest - 10_000, { allowed: 3, deferred: 1, failOpen: 1, held: 2, wouldRefuse: 1 }),
        bucket(newest, { skipped: 4, errors: 1, skippedBy: { frequency_capped: 3, opted_out: 1 } }),
      ],
    };
    const s = model.summarize(gate, now, 300_000, 10_000);
    assert.deepEqual([s.allowed, s.skipped, s.deferred, s.errors, s.failOpen, s.held, s.wouldRefuse], [4, 6, 1, 1, 1, 2, 1]);
    assert.deepEqual(s.skippedBy, [{ reason: "frequency_capped", count: 3 }, { reason: "opted_out", count: 3 }]);
    assert.equal(s.bars.length, 30);
    assert.equal(s.bars[29]?.t, newest);
    assert.deepEqual([s.bars[0]?.allowed, s.bars[0]?.skipped], [1, 2]);
    assert.deepEqual([s.bars[28]?.allowed, s.bars[28]?.deferred], [3, 1]);
    assert.deepEqual([s.bars[29]?.skipped, s.bars[29]?.errors], [4, 1]);
    assert.equal(s.bars.slice(1, 28).every((b) => b.allowed + b.skipped + b.deferred + b.errors === 0), true);
  });

  it("adds up a gate's totals since deploy, fail-open and overloaded together", () => {
    const t = model.totals({
      left: [
        { output: "allowed", reason: "none", count: 5 }, { output: "allowed", reason: "fail_open", count: 2 },
        { output: "allowed", reason: "overloaded", count: 1 }, { output: "skipped", reason: "opted_out", count: 4 },
      ],
      errors: [{ reason: "invalid_send", count: 3 }],
    });
    assert.deepEqual(t, { allowed: 8, skipped: 4, deferred: 0, errors: 3, failOpen: 3 });
  });

  it("turns usage into bars: shadow marked, full when nothing remains, over-full capped at 100 %", () => {
    const rows = model.usageRows({
      caps: [
        { cap_id: "a", scope: "channel", channel: "sms", count: 1, max_count: 4, remaining: 3, retry_after_seconds: 0, window_seconds: 3600 },
        { cap_id: "b", scope: "global", channel: "*", count: 7, max_count: 5, remaining: 0, retry_after_seconds: 90, window_seconds: 86400, enforcement: "shadow" },
      ],
    });
    assert.deepEqual(rows.map((r) => [r.id, r.shadow, r.fraction, r.full, r.retry, r.scope]), [
      ["a", false, 0.25, false, 0, "sms"],
      ["b", true, 1, true, 90, "every channel"],
    ]);
  });

  it("says why the inspector cannot read: a missing permission names frequency-cap.read", () => {
    assert.match(model.refusal(401, { message: "Unauthorized" }), /frequency-cap\.read permission/);
    assert.match(model.refusal(404, { error: "no deployed cap-config" }), /not deployed/);
    assert.match(model.refusal(400, { error: "channel: unknown channel \"pigeon\"" }), /Check the fields: channel: unknown channel "pigeon"/);
    assert.match(model.refusal(500, {}), /HTTP 500/);
  });

  it("writes waits as people read them", () => {
    assert.deepEqual([5, 75, 3600, 3660, 90_000, null].map((s) => model.formatSeconds(s)), ["5 s", "1 min 15 s", "1 h", "1 h 1 min", "1 d 1 h", "never"]);
  });
});
