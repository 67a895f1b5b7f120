import assert from "node:assert/strict";
import { StoreUnavailableError } from "../../src/core/errors";
import { SendQueue, type Lane } from "../../src/core/sendQueue/sendQueue";
import type { Settled } from "../../src/core/store/admissionStore";
import { CircuitBreaker } from "../../src/core/store/storeGuard";

/**
 * A lane standing in for a Redis Cluster whose items named "down:…" live on a
 * master that is failing over: their slot's call fails, the others' answer.
 */
function clusterLane(): Lane<string, string> {
  return {
    name: "claim",
    bounded: true,
    run: async (items) => items.map((item): Settled<string> => (item.startsWith("down:")
      ? new StoreUnavailableError("error", "Connection is closed.")
      : `ok ${item}`)),
  };
}

describe("core/sendQueue: a call the store partly answered", () => {
  it("fails only the items of the failing slots, and never opens the breaker for the others", async () => {
    const breaker = new CircuitBreaker({ failureThreshold: 3, coolDownMs: 60_000 });
    const queue = new SendQueue({ maxQueued: 10_000, maxInFlight: 1, maxBatch: 10, timeoutMs: 1000, breaker });
    const lane = clusterLane();
    const answers: string[] = [];
    // ten batches, each mixing a recipient on the failing master with ones on healthy masters
    for (let wave = 0; wave < 10; wave++) {
      const settled = await Promise.allSettled([`down:${wave}`, `up:${wave}a`, `up:${wave}b`].map((item) => queue.submit(lane, item)));
      answers.push(...settled.map((s) => (s.status === "fulfilled" ? s.value : (s.reason as StoreUnavailableError).kind)));
    }
    assert.equal(answers.filter((a) => a === "error").length, 10, "each failing-slot item failed on its own");
    assert.equal(answers.filter((a) => a.startsWith("ok up:")).length, 20, "every healthy-slot item was answered");
    assert.equal(breaker.state(), "closed");
    assert.equal(breaker.opens, 0);
  });

  it("still opens the breaker when whole calls fail (nothing answered)", async () => {
    const breaker = new CircuitBreaker({ failureThreshold: 3, coolDownMs: 60_000 });
    const queue = new SendQueue({ maxQueued: 10_000, maxInFlight: 1, maxBatch: 10, timeoutMs: 1000, breaker });
    const lane = clusterLane();
    for (let wave = 0; wave < 3; wave++) await queue.submit(lane, `down:${wave}`).catch(() => undefined);
    assert.equal(breaker.state(), "open");
    await assert.rejects(queue.submit(lane, "up:late"), (err: StoreUnavailableError) => err.kind === "circuit_open");
  });
});

/**
 * A lane standing in for a cluster call whose slots are answered apart: it
 * tells the items named "early:…" at once (EarlyAnswer), and settles each
 * call only when `finish` is called (or never); `lateEarly` tells every item
 * of every call early, after the fact.
 */
function splitLane(): { lane: Lane<string, string>; finish: () => void; lateEarly: () => void } {
  const finishers: (() => void)[] = [];
  const late: (() => void)[] = [];
  const lane: Lane<string, string> = {
    name: "claim",
    bounded: true,
    run: (items, early) => {
      items.forEach((item, i) => { if (item.startsWith("early:")) early?.(i, `early ${item}`); });
      late.push(() => items.forEach((item, i) => early?.(i, `late ${item}`)));
      return new Promise((resolve) => {
        finishers.push(() => resolve(items.map((item) => `whole ${item}`)));
      });
    },
  };
  return { lane, finish: () => finishers.splice(0).forEach((f) => f()), lateEarly: () => late.forEach((f) => f()) };
}

describe("core/sendQueue: items a call answers early (a cluster's masters answering apart)", () => {
  it("tells them before the call settles, once, and the rest with the call", async () => {
    const breaker = new CircuitBreaker({ failureThreshold: 3, coolDownMs: 60_000 });
    const queue = new SendQueue({ maxQueued: 100, maxInFlight: 4, maxBatch: 10, timeoutMs: 5000, breaker });
    const { lane, finish } = splitLane();
    const told: string[] = [];
    // the first item finds the queue idle and goes alone; the other two go together
    const answers = ["early:a", "slow:b", "early:c"].map((item) => queue.submit(lane, item).then((answer) => { told.push(answer); }));
    await Promise.all([answers[0], answers[2]]);
    assert.deepEqual(told, ["early early:a", "early early:c"], "the early items, before their calls settled");
    assert.equal(queue.length, 1, "only the item not yet told still counts");
    finish();
    await Promise.all(answers);
    assert.deepEqual(told, ["early early:a", "early early:c", "whole slow:b"], "each told once, the early ones never again");
    assert.equal(queue.length, 0);
  });

  it("keeps the early answers of a call that times out, fails only the rest, and tells no one of a late answer", async () => {
    const breaker = new CircuitBreaker({ failureThreshold: 1, coolDownMs: 60_000 });
    const queue = new SendQueue({ maxQueued: 100, maxInFlight: 4, maxBatch: 10, timeoutMs: 50, breaker });
    const { lane, lateEarly } = splitLane();
    // the first item finds the queue idle and goes alone; the other two go together
    const settled = await Promise.allSettled(["early:x", "early:a", "slow:b"].map((item) => queue.submit(lane, item)));
    assert.deepEqual(settled.map((s) => (s.status === "fulfilled" ? s.value : (s.reason as StoreUnavailableError).kind)), ["early early:x", "early early:a", "timeout"]);
    // the store answered part of each call: it is up, so even a breaker that opens at the first failure stays closed
    assert.equal(breaker.state(), "closed");
    lateEarly();
    assert.equal(queue.length, 0, "a late answer was told to no one (its item was answered already)");
  });
});
