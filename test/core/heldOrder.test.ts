import assert from "node:assert/strict";
import { HeldOrder } from "../../src/core/hold/heldOrder";

describe("HeldOrder: a recipient's held msgs due in arrival order", () => {
  const now = 1_000_000;

  it("gives each later msg of a recipient due with or before the last one 1 ms after it, and leaves other recipients and later times alone", () => {
    const order = new HeldOrder();
    assert.deepEqual([1, 2, 3].map(() => order.dueAfter("o", "r", now + 500, now + 60_000, now)), [now + 500, now + 501, now + 502]);
    assert.equal(order.dueAfter("o", "other", now + 500, now + 60_000, now), now + 500);
    assert.equal(order.dueAfter("o2", "r", now + 500, now + 60_000, now), now + 500, "another org's recipient of that name");
    assert.equal(order.dueAfter("o", "r", now + 400, now + 60_000, now), now + 503, "an earlier due time waits behind the held ones");
    assert.equal(order.dueAfter("o", "r", now + 900, now + 60_000, now), now + 900, "a later one keeps its own");
  });

  it("never pushes a msg past its latest time, nor pulls one back from its own due time", () => {
    const order = new HeldOrder();
    order.dueAfter("o", "r", now + 500, now + 60_000, now);
    assert.equal(order.dueAfter("o", "r", now + 500, now + 500, now), now + 500, "no room before its deadline: its own time");
    assert.equal(order.dueAfter("o", "r", now + 200, now + 300, now), now + 300, "as late as it may be");
  });

  it("forgets the recipients whose msgs are due already (a burst of 100,000), and keeps the order of those still held", () => {
    const order = new HeldOrder();
    for (let i = 0; i < 100_000; i++) order.dueAfter("o", `r${i}`, i % 2 === 0 ? now - 1 : now + 10_000, now + 60_000, now);
    assert.ok(order.size < 70_000, `${order.size} kept: the 50,000 due ones are forgotten as it grows`);
    assert.equal(order.dueAfter("o", "r1", now + 10_000, now + 60_000, now), now + 10_001, "still held: after it");
    assert.equal(order.dueAfter("o", "r99999", now + 10_000, now + 60_000, now), now + 10_001);
  });
});
