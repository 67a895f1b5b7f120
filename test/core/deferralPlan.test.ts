import assert from "node:assert/strict";
import { deferralDeadline, planDeferral, RELEASE_MARGIN_MS } from "../../src/core/hold/holdPlan";

describe("core/deferral: planDeferral", () => {
  const now = Date.UTC(2026, 10, 30, 12);
  it("holds until the due time plus jitter within the deadline", () => {
    const plan = planDeferral(now + 60_000, 10_000, { now, deferMaxMs: 3_600_000 }, () => 0.5);
    assert.deepEqual(plan, { kind: "defer", dueAt: now + 65_000, firstDeferredAt: now, deadline: now + 3_600_000 });
  });
  it("expires when the due time is past deferMax counted from the first deferral, or past expiresAt", () => {
    assert.equal(planDeferral(now + 10_000, 0, { now, deferMaxMs: 60_000, firstDeferredAt: now - 55_000 }).kind, "expired");
    assert.equal(planDeferral(now + 10_000, 0, { now, deferMaxMs: 3_600_000, expiresAt: now + 5_000 }).kind, "expired");
    assert.equal(planDeferral(null, 0, { now, deferMaxMs: 3_600_000 }).kind, "expired", "a cap that never frees cannot be waited for");
  });
  it("keeps the jitter a margin short of the deadline, so the poller takes the msg before it expires", () => {
    const plan = planDeferral(now + 50_000, 60_000, { now, deferMaxMs: 60_000 }, () => 0.99);
    assert.deepEqual(plan, { kind: "defer", dueAt: now + 50_000 + Math.floor(0.99 * (10_000 - RELEASE_MARGIN_MS)), firstDeferredAt: now, deadline: now + 60_000 });
    assert.equal(deferralDeadline({ now, deferMaxMs: 60_000, expiresAt: now + 1 }), now + 1);
    const close = planDeferral(now + 50_000, 60_000, { now, deferMaxMs: 3_600_000, expiresAt: now + 50_500 }, () => 0.99);
    assert.equal(close.kind === "defer" && close.dueAt, now + 50_000, "a deadline closer than the margin: no jitter, due at its time");
  });
  it("spreads a burst of 10,000 held msgs with a near expiresAt over the span it has, each due at least the margin before it", () => {
    const expiresAt = now + 60_000 + 1_500;
    const plans = Array.from({ length: 10_000 }, () => planDeferral(now + 60_000, 10_000, { now, deferMaxMs: 3_600_000, expiresAt }));
    const due = plans.map((p) => (p.kind === "defer" ? p.dueAt : Number.NaN));
    assert.ok(due.every((d) => d >= now + 60_000 && d <= expiresAt - RELEASE_MARGIN_MS), "each due between its time and the margin before expiresAt");
    assert.ok(Math.max(...due) - Math.min(...due) > 400, "still spread over the 500 ms left");
  });
});
