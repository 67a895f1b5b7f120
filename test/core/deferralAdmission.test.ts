import assert from "node:assert/strict";
import { capAdmission } from "../../src/core/admission";
import { StoreUnavailableError } from "../../src/core/errors";
import { heldAdmission } from "../../src/core/hold/heldAdmission";
import { MemoryDeferQueue } from "../../src/core/hold/memoryHeldQueue";
import { validateRules } from "../../src/core/schema/validateRules";

const ctx = { gate: "frequency-cap-gate", configId: "cfg", storeKind: "redis", channel: "sms", now: new Date() };

describe("core/deferral: what a held or timed-out msg keeps", () => {
  it("records the claim of a timed-out store call, so it can be given back", () => {
    const [rule] = validateRules([{ id: "c", scope: "global", max_count: 1, window_seconds: 60 }]);
    const caps = [{ rule: rule, key: "fc:{o|r}:c", field: "c", max: 1, windowMs: 60_000 }];
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
    const held = heldAdmission({ status: "skipped", gate: "g", claims: [kept], trail: [] }, Date.now(), "gate1");
    assert.deepEqual(held.claims, [kept]);
    assert.equal(held.deferrals, 1);
  });

  it("keeps when each gate first held a msg: a second gate starts its own, a gate holding it again keeps its first", () => {
    const t0 = Date.parse("2026-01-01T00:00:00Z");
    const first = heldAdmission({ status: "skipped", gate: "g", claims: [], trail: [] }, t0, "gateA");
    const second = heldAdmission(first, t0 + 5000, "gateB");
    const again = heldAdmission(second, t0 + 9000, "gateA");
    assert.deepEqual({ ...again.deferred_since }, { gateA: "2026-01-01T00:00:00.000Z", gateB: "2026-01-01T00:00:05.000Z" });
    assert.equal(again.first_deferred_at, "2026-01-01T00:00:00.000Z", "the chain's first hold");
    assert.equal(again.deferrals, 3);
    // what a msg carries is read, not trusted: a value that is no text is left out, a name like __proto__ is only a name
    const read = heldAdmission({ status: "skipped", gate: "g", claims: [], trail: [], deferred_since: JSON.parse('{"__proto__":"2026-01-01T00:00:00.000Z","x":5}') }, t0, "gateA");
    assert.deepEqual(Object.keys(read.deferred_since ?? {}).sort(), ["__proto__", "gateA"]);
  });

  it("refuses to hold a msg in a closed memory queue (the cap-config already saved it)", async () => {
    const queue = new MemoryDeferQueue();
    await queue.close();
    await assert.rejects(queue.defer({ id: "", gate: "g", dueAt: Date.now(), deferrals: 1, firstDeferredAt: Date.now(), msg: {} }), /closed/);
  });
});
