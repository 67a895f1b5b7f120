import assert from "node:assert/strict";
import { capAdmission, type Admission } from "../../src/core/admission";
import { StoreUnavailableError } from "../../src/core/errors";
import { heldAdmission } from "../../src/core/deferral/deferralAdmission";
import { MemoryDeferQueue } from "../../src/core/defer";
import { validateRules } from "../../src/core/schema/validateRules";

const ctx = { gate: "frequency-cap-gate", configId: "cfg", storeKind: "redis", channel: "sms", now: new Date() };

describe("core/deferral: what a held or timed-out msg keeps", () => {
  it("records the claim of a timed-out store call, so it can be given back", () => {
    const [rule] = validateRules([{ id: "c", scope: "global", max_count: 1, window_seconds: 60 }]);
    const caps = [{ rule: rule!, key: "fc:{o|r}:c", field: "c", max: 1, windowMs: 60_000 }];
    const admission = capAdmission({ kind: "fail_open", error: new StoreUnavailableError("timeout", "late"), caps, attempt: { member: "m1", token: 9 } }, undefined, ctx);
    assert.equal(admission.reason, "fail_open");
    assert.deepEqual(admission.claims, [{
      gate: "frequency-cap-gate", kind: "cap", config: "cfg", store: "redis", member: "m1", token: 9,
      key: "fc:{o|r}:c", fields: ["c"], cap_ids: ["c"], at: ctx.now.toISOString(),
    }]);
    const refused = capAdmission({ kind: "fail_open", error: new StoreUnavailableError("error", "down") }, undefined, ctx);
    assert.deepEqual(refused.claims, [], "a store that never answered took nothing");
  });

  it("keeps claims a refund could not give back when a msg is held", () => {
    const kept = { gate: "suppression-gate", kind: "dup" as const, config: "gone", store: "redis", member: "m", key: "k", at: "" };
    const held = heldAdmission({ status: "skipped", gate: "g", claims: [kept], trail: [] } as Admission, Date.now());
    assert.deepEqual(held.claims, [kept]);
    assert.equal(held.deferrals, 1);
  });

  it("refuses to hold a msg in a closed memory queue (the cap-config already saved it)", async () => {
    const queue = new MemoryDeferQueue();
    await queue.close();
    await assert.rejects(queue.defer({ id: "", gate: "g", dueAt: Date.now(), deferrals: 1, firstDeferredAt: Date.now(), msg: {} }), /closed/);
  });
});
