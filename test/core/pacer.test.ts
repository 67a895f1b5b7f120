import assert from "node:assert/strict";
import { Pacer } from "../../src/core/throughput/pacer";
import { preciseNow, StoreClock } from "../../src/core/throughput/storeClock";
import { sleep } from "../support/redis";

describe("pacer: a gate's own held msgs, each released at its instant", function () {
  it("releases each item at or after its instant, earliest first, ties in the order they were added", async () => {
    const out: { item: string; at: number }[] = [];
    const pacer = new Pacer<string>((items) => { for (const item of items) out.push({ item, at: preciseNow() }); });
    const t0 = preciseNow() + 30;
    const due = new Map([["c", t0 + 60], ["a", t0], ["b1", t0 + 30], ["b2", t0 + 30], ["d", t0 + 90]]);
    for (const [item, at] of due) pacer.add(at, item);
    assert.equal(pacer.size, 5);
    await sleep(t0 + 140 - preciseNow());
    assert.deepEqual(out.map((o) => o.item), ["a", "b1", "b2", "c", "d"]);
    for (const o of out) assert.ok(o.at >= (due.get(o.item) as number), `${o.item} ${(due.get(o.item) as number) - o.at} ms early`);
    assert.equal(pacer.size, 0);
  });

  it("an item added with an earlier instant than the one the timer waits for goes first; an overdue one goes at once", async () => {
    const out: string[] = [];
    const pacer = new Pacer<string>((items) => out.push(...items));
    pacer.add(preciseNow() + 10_000, "late");
    pacer.add(preciseNow() + 20, "soon");
    pacer.add(preciseNow() - 50, "overdue");
    await sleep(5);
    assert.deepEqual(out, ["overdue"]);
    await sleep(40);
    assert.deepEqual(out, ["overdue", "soon"]);
    assert.deepEqual(pacer.stop(), ["late"]);
  });

  it("takes out what is picked (msg.flush, msg.reset) in instant order and keeps pacing the rest", async () => {
    const out: number[] = [];
    const pacer = new Pacer<number>((items) => out.push(...items));
    const t0 = preciseNow() + 40;
    for (let i = 9; i >= 0; i--) pacer.add(t0 + i * 5, i);
    assert.deepEqual(pacer.take((n) => n % 2 === 1), [1, 3, 5, 7, 9]);
    await sleep(t0 + 80 - preciseNow());
    assert.deepEqual(out, [0, 2, 4, 6, 8]);
  });

  it("holds 100,000 items and releases them in instant order (a heap: no item is passed over)", async () => {
    const out: number[] = [];
    let now = 1_000;
    const pacer = new Pacer<number>((items) => out.push(...items), () => now);
    const instants = Array.from({ length: 100_000 }, (_, i) => 1_000 + ((i * 7919) % 100_000));
    for (const [i, at] of instants.entries()) pacer.add(at, i);
    now = 200_000;
    await sleep(5);
    assert.equal(out.length, 100_000);
    for (let k = 1; k < out.length; k++) {
      const [a, b] = [instants[out[k - 1]], instants[out[k]]];
      assert.ok(a < b || (a === b && out[k - 1] < out[k]), `out of order at ${k}`);
    }
  });

  it("releaseDue hands out what is due now, without the timer, and only that; the timer still paces the rest, each once", async () => {
    const out: string[] = [];
    let now = 1_000;
    const pacer = new Pacer<string>((items) => out.push(...items), () => now);
    pacer.add(1_010, "a");
    pacer.add(1_020, "b");
    pacer.add(1_030, "c");
    pacer.releaseDue();
    assert.deepEqual(out, [], "nothing is due yet");
    now = 1_020;
    pacer.releaseDue();
    assert.deepEqual(out, ["a", "b"], "what is due leaves in this call, before any timer could fire");
    now = 1_030;
    await sleep(40);
    assert.deepEqual(out, ["a", "b", "c"], "the rest by the timer, none twice");
    pacer.add(1_030, "d");
    assert.deepEqual(pacer.stop(), ["d"], "an item due now but not yet released is handed back at stop");
  });

  it("stop hands back every held item, earliest first, and refuses new ones (the caller hands them to the queue)", async () => {
    const out: string[] = [];
    const pacer = new Pacer<string>((items) => out.push(...items));
    pacer.add(preciseNow() + 30, "b");
    pacer.add(preciseNow() + 20, "a");
    assert.deepEqual(pacer.stop(), ["a", "b"]);
    assert.equal(pacer.add(preciseNow(), "c"), false);
    await sleep(50);
    assert.deepEqual(out, [], "nothing released after stop");
  });
});

describe("store clock: when the store's instant comes by this process's clock", function () {
  it("takes the largest offset seen (an answer read late gives a smaller one), so a release is never early by the store", () => {
    let local = 10_000;
    const clock = new StoreClock(() => local);
    assert.equal(clock.offsetMs, 0);
    clock.observe(10_003); // the store runs 5 ms ahead; this answer was read 2 ms late
    clock.observe(10_005);
    local = 10_020;
    clock.observe(10_010); // read 15 ms late (a busy loop)
    assert.equal(clock.offsetMs, 5);
    assert.equal(clock.toLocal(20_005), 20_000);
  });

  it("read against a sub-ms local clock, a store clock in whole ms never makes a release early (with whole-ms local reads it did, by up to 1 ms)", () => {
    // the store's clock runs `ahead` ms ahead of this process's and is read in whole ms (the memory store's is)
    for (const ahead of [0.1, 0.4, 0.6, 0.9, -0.3]) {
      const early = (localNow: (t: number) => number): number => {
        let t = 5_000;
        const clock = new StoreClock(() => localNow(t));
        for (let i = 0; i < 1_000; i++, t += 0.37) clock.observe(Math.floor(t + ahead));
        // the worst release over many instants: released at toLocal(instant), where the store's true time is t + ahead
        let worst = 0;
        for (let instant = 6_000; instant < 6_100; instant++) worst = Math.max(worst, instant - (clock.toLocal(instant) + ahead));
        return worst;
      };
      assert.ok(early((x) => x) <= 1e-9, `ahead ${ahead}: early by ${early((x) => x)} ms with a sub-ms local clock`);
      if (ahead > 0 && ahead < 1) assert.ok(early(Math.floor) > 0, `ahead ${ahead}: a whole-ms local clock shows the fault this guards against`);
    }
  });

  it("by default reads this process's clock finely enough: a whole-ms store clock never seems further ahead than it is", () => {
    // the store's clock, `ahead` ms ahead of this process's performance clock and read in whole ms, as the memory store's is;
    // read by Date.now() (whole ms, and drifting from the performance clock) a sample ran up to 1 ms too large
    for (const ahead of [0.3, 0.6, 0.95]) {
      const clock = new StoreClock();
      const until = preciseNow() + 5;
      while (preciseNow() < until) clock.observe(Math.floor(preciseNow() + ahead));
      // within a µs: the clock is ~1.7e12 ms, where a double holds a ms to about 0.25 µs
      assert.ok(clock.offsetMs <= ahead + 1e-3, `ahead ${ahead}: offset taken as ${clock.offsetMs}`);
    }
  });

  it("follows a clock that moves: an offset older than two windows is forgotten", () => {
    let local = 0;
    const clock = new StoreClock(() => local);
    clock.observe(50);
    local = 10_000;
    clock.observe(10_010);
    assert.equal(clock.offsetMs, 50, "the last window still counts");
    local = 20_000;
    clock.observe(20_010);
    assert.equal(clock.offsetMs, 10);
  });
});
