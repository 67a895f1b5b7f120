import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../support/nodeRedProcess";

interface Bar { t: number; allowed: number; skipped: number; deferred: number; errors: number }
type Translate = (key: string, params?: Record<string, unknown>) => string;
interface SidebarModel {
  CATALOG: string;
  summarize(gate: unknown, now: number, windowMs: number, bucketMs: number): {
    allowed: number; skipped: number; deferred: number; errors: number; failOpen: number; held: number; wouldRefuse: number;
    skippedBy: { reason: string; count: number }[]; bars: Bar[];
  };
  totals(gate: unknown): Record<string, number>;
  formatSeconds(seconds: number | null, t: Translate): string;
  usageRows(body: unknown, t: Translate): { id: string; shadow: boolean; fraction: number; full: boolean; retry: number | null; scope: string; window: string }[];
  refusal(status: number, body: unknown, t: Translate): string;
}

// the editor script, loaded as Node loads it (it exports its pure part when `module` exists)
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { model } = require(join(ROOT, "resources", "admission-sidebar.js")) as { model: SidebarModel };
const catalog = JSON.parse(readFileSync(join(ROOT, "plugins", "locales", "en-US", "admission-sidebar.json"), "utf8")) as Record<string, unknown>;

/** The plugin's catalog as the editor's RED._ reads it: a missing key fails the test instead of showing itself. */
const t: Translate = (key, params = {}) => {
  let at: unknown = (catalog as { admission: unknown }).admission;
  for (const part of key.split(".")) at = (at as Record<string, unknown> | undefined)?.[part];
  assert.equal(typeof at, "string", `catalog key admission.${key}`);
  return (at as string).replace(/__(\w+)__/g, (_, name: string) => String(params[name]));
};

const bucket = (t: number, counts: Partial<Bar> & { skippedBy?: Record<string, number>; failOpen?: number; held?: number; wouldRefuse?: number }) => ({
  t, allowed: 0, skipped: 0, deferred: 0, errors: 0, failOpen: 0, held: 0, wouldRefuse: 0, skippedBy: {}, ...counts,
});

describe("editor plugin: the Admission sidebar's model", () => {
  it("takes every text of the sidebar from its catalog, and each key it asks for is there", () => {
    assert.equal(model.CATALOG, "@sendgate/node-red-frequency-cap/admission-sidebar");
    const source = readFileSync(join(ROOT, "resources", "admission-sidebar.js"), "utf8");
    const keys = [...source.matchAll(/\bt\("([a-zA-Z.]+)"\s*[,)]/g)].map((m) => m[1]);
    assert.ok(keys.length > 30, `${keys.length} keys found`);
    for (const key of keys) t(key, {});
    for (const kind of ["allowed", "skipped", "deferred", "errors"]) t(`stat.${kind}`);
    for (const unit of ["s", "min", "h", "d"]) t(`time.${unit}`, { n: 1 });
    // keys chosen at run time
    for (const key of ["shadow", "shadowOrg", "usage.free", "usage.wouldRefuse"]) t(key, {});
  });

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
    }, t);
    assert.deepEqual(rows.map((r) => [r.id, r.shadow, r.fraction, r.full, r.retry, r.scope, r.window]), [
      ["a", false, 0.25, false, 0, "sms", "1 h"],
      ["b", true, 1, true, 90, "every channel", "1 d"],
    ]);
  });

  it("says why the inspector cannot read: a missing permission names frequency-cap.read", () => {
    assert.match(model.refusal(401, { message: "Unauthorized" }, t), /frequency-cap\.read permission/);
    assert.match(model.refusal(404, { error: "no deployed cap-config" }, t), /not deployed/);
    assert.match(model.refusal(400, { error: "channel: unknown channel \"pigeon\"" }, t), /Check the fields: channel: unknown channel "pigeon"/);
    assert.equal(model.refusal(500, {}, t), "Usage could not be read (HTTP 500).");
    assert.equal(model.refusal(0, undefined, t), "Node-RED did not answer.");
  });

  it("writes waits as people read them", () => {
    assert.deepEqual([0, 5, 75, 3600, 3660, 90_000, null].map((s) => model.formatSeconds(s, t)), ["0 s", "5 s", "1 min 15 s", "1 h", "1 h 1 min", "1 d 1 h", "never"]);
  });
});
