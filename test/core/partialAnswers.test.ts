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
