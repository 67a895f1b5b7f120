import assert from "node:assert/strict";
import { deferralDeadline, planDeferral } from "../../src/core/deferral/deferralPlan";

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
  it("pulls a jittered time back to the deadline", () => {
    const plan = planDeferral(now + 50_000, 60_000, { now, deferMaxMs: 60_000 }, () => 0.99);
    assert.deepEqual(plan, { kind: "defer", dueAt: now + 60_000, firstDeferredAt: now, deadline: now + 60_000 });
    assert.equal(deferralDeadline({ now, deferMaxMs: 60_000, expiresAt: now + 1 }), now + 1);
  });
});
