import assert from "node:assert/strict";
import { heldByGate, heldMatching, holderMatcher, holderMeta } from "../../../src/core/hold/heldListing";
import { MemoryDeferQueue } from "../../../src/core/hold/memoryHeldQueue";
import type { DeferInput, DeferredMsg } from "../../../src/core/hold/heldQueue";

const NOW = Date.UTC(2026, 0, 1);

function entry(gate: string, id: string, over: Partial<DeferInput> = {}): DeferInput {
  return { id, gate, dueAt: NOW + 1000, deferrals: 1, firstDeferredAt: NOW, msg: { payload: "body" }, ...over };
}

/** A recipient keyed as with hashRecipients: never the address itself. */
const tokenOf = (recipient: string) => `h(${recipient})`;
const query = (recipient: string, org = "acme") => ({ org, recipientToken: tokenOf(recipient), tokenOf, defaultOrg: "acme" });

describe("held msgs listing (core)", function () {
  it("matches a held msg by the key its gate stored, or by the recipient it kept keyed the same way; the org counts, absent it is the default", () => {
    const matches = holderMatcher(query("ann"));
    const held = (meta: Record<string, string> | undefined): DeferredMsg => ({ ...entry("g", "x"), id: "x", ...(meta ? { meta } : {}) });
    assert.equal(matches(held(holderMeta("acme", tokenOf("ann")))), true);
    assert.equal(matches(held(holderMeta("globex", tokenOf("ann")))), false, "another org");
    assert.equal(matches(held(holderMeta("acme", tokenOf("bob")))), false);
    assert.equal(matches(held({ recipient: "ann", org: "acme", ceiling: "c" })), true, "a paced msg keeps the recipient itself");
    assert.equal(matches(held({ recipient: "ann" })), true, "no org: the default");
    assert.equal(matches(held({ recipient: "ann", org: "globex" })), false);
    assert.equal(matches(held(undefined)), false, "a msg that names no one (an older version's) is no one's");
    // names are data: a recipient called __proto__ is matched as any other, never through a prototype
    const proto = holderMatcher(query("__proto__"));
    assert.equal(proto(held(JSON.parse('{"org":"acme","recipient":"__proto__"}') as Record<string, string>)), true);
    assert.equal(proto(held({ org: "acme" })), false);
  });

  it("lists per gate its count and next due; a recipient's msgs earliest first, with reason, deferrals and expiry, no body", async () => {
    const a = new MemoryDeferQueue({ gate: "a", clock: () => NOW });
    const b = new MemoryDeferQueue({ gate: "b", clock: () => NOW });
    const empty = new MemoryDeferQueue({ gate: "c", clock: () => NOW });
    const queues = new Map([["a", a], ["b", b], ["c", empty]]);
    const queueOf = (gate: string) => queues.get(gate) as MemoryDeferQueue;
    await a.deferMany([
      { entry: entry("a", "a1", { dueAt: NOW + 5000, meta: holderMeta("acme", tokenOf("ann")), msg: { admission: { reason: "quiet_hours" } }, deferrals: 2, expiresAt: NOW + 9000 }) },
      { entry: entry("a", "a2", { dueAt: NOW + 3000, meta: holderMeta("acme", tokenOf("bob")) }) },
    ]);
    await b.deferMany([
      { entry: entry("b", "b1", { dueAt: NOW + 4000, meta: { recipient: "ann", org: "acme", ceiling: "c1" }, deadline: NOW + 8000 }), leaseUntil: NOW + 34_000 },
      { entry: entry("b", "b2", { dueAt: NOW + 7000, meta: { recipient: "ann", leavesBy: "allowed" } }) },
    ]);
    assert.deepEqual(await heldByGate(["a", "b", "c"], queueOf), [
      { gate: "a", count: 2, next_due_at: new Date(NOW + 3000).toISOString() },
      // b1 is held leased by its gate: the queue hands it out when its lease ends
      { gate: "b", count: 2, next_due_at: new Date(NOW + 7000).toISOString() },
      { gate: "c", count: 0, next_due_at: null },
    ]);
    const iso = (ms: number) => new Date(ms).toISOString();
    assert.deepEqual(await heldMatching(["a", "b", "c"], queueOf, holderMatcher(query("ann"))), {
      held: [
        { gate: "b", id: "b1", due_at: iso(NOW + 4000), reason: "paced", deferrals: 1, expires_at: iso(NOW + 8000) },
        { gate: "a", id: "a1", due_at: iso(NOW + 5000), reason: "quiet_hours", deferrals: 2, expires_at: iso(NOW + 9000) },
        { gate: "b", id: "b2", due_at: iso(NOW + 7000), reason: "parked", deferrals: 1, expires_at: null },
      ],
      scanned: 4,
      complete: true,
    });
    // the bound is over all the gates: a gate left unread that holds msgs makes the listing incomplete
    const cut = await heldMatching(["a", "b", "c"], queueOf, holderMatcher(query("ann")), 2);
    assert.deepEqual([cut.held.map((h) => h.id), cut.scanned, cut.complete], [["a1"], 2, false]);
    const exact = await heldMatching(["a", "c"], queueOf, holderMatcher(query("ann")), 2);
    assert.deepEqual([exact.scanned, exact.complete], [2, true], "at exactly the bound, with nothing left, it is whole");
  });
});
