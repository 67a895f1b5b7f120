import assert from "node:assert/strict";
import { MemoryStore } from "../../src/core/store/memoryStore";
import { dropExpired } from "../../src/core/store/sweepParts";
import type { ClaimOutcome } from "../../src/core/store/admissionStore";

describe("memory store: the periodic sweep", () => {
  const cap = { field: "minute", windowMs: 60_000, max: 1 };
  const claimOf = (recipient: string, member = "m") => ({ key: `sweep:{default|${recipient}}:c`, member, token: 1, counters: [cap] });

  it("drops expired recipients a slice per turn of the loop, answers claims between its slices, and keeps the live ones", async () => {
    let now = 1_000_000;
    const store = new MemoryStore(() => now);
    await store.claim(Array.from({ length: 20_000 }, (_, i) => claimOf(`old${i}`)));
    // past the window and its grace: every old recipient has expired
    now += 60_000 + 60_000 + 1;
    await store.claim(Array.from({ length: 5_000 }, (_, i) => claimOf(`live${i}`)));
    let ended = false;
    const sweeping = store.sweepInTurns(500).then(() => { ended = true; });
    let turns = 0;
    const answered: boolean[] = [];
    while (!ended) {
      await new Promise((resolve) => setImmediate(resolve));
      turns++;
      const [answer] = await store.claim([claimOf(`during${turns}`)]);
      answered.push((answer as ClaimOutcome).allowed);
    }
    await sweeping;
    assert.ok(turns >= 0.9 * (25_000 / 500), `the loop turned ${turns} times during a sweep of 25,000 recipients in slices of 500`);
    assert.ok(answered.every(Boolean));
    // back to before they expired: what the sweep left would count again, and it left none of the old ones
    now -= 60_000 + 60_000 + 1;
    const kept = store.snapshot().counters.map(([key]) => key);
    assert.equal(kept.filter((key) => key.includes("|old")).length, 0);
    assert.equal(kept.filter((key) => key.includes("|live")).length, 5_000);
    await store.close();
  });

  it("stops between slices once the store closes", async () => {
    let now = 1_000_000;
    const store = new MemoryStore(() => now);
    await store.claim(Array.from({ length: 10_000 }, (_, i) => claimOf(`old${i}`)));
    now += 60_000 + 60_000 + 1;
    const sweeping = store.sweepInTurns(100);
    await store.close();
    await sweeping;
    now -= 60_000 + 60_000 + 1;
    const left = store.snapshot().counters.length;
    assert.ok(left > 9_000, `${left} of 10,000 recipients left: the sweep stopped after its first slice`);
  });

  it("drops exactly the expired entries while others are added and deleted between its slices, through the table's shrinking", () => {
    // a value names its own key: a walk whose keys and values fell out of step would drop a key for another's value
    type Entry = { key: string; expired: boolean };
    const map = new Map<string, Entry>();
    const put = (key: string, expired: boolean): void => { map.set(key, { key, expired }); };
    for (let i = 0; i < 10_000; i++) put(`k${i}`, i % 3 === 0);
    const looked = new Set<string>();
    const parts = dropExpired(map, (entry: Entry) => { looked.add(entry.key); return entry.expired; }, () => 0, 100);
    let slices = 0;
    while (parts.next().done !== true) {
      slices++;
      // between slices, as claims do: entries behind and ahead of the walk go, most of the map by the end (V8 shrinks
      // its table and moves the iterators to the new one), and new ones come after the walk's place
      for (let i = 0; i < 95; i++) map.delete(`k${slices * 95 + i}`);
      put(`new${slices}`, slices % 2 === 0);
    }
    assert.ok(slices >= 10, `${slices} slices`);
    for (const [key, entry] of map) {
      assert.equal(entry.key, key);
      assert.equal(entry.expired, false, `${key} is expired and was kept`);
    }
    // every entry the test did not delete was looked at and, when live, kept; the new ones too, added after the walk's place
    for (let i = 0; i < 10_000; i++) {
      const deleted = i >= 95 && i < (slices + 1) * 95;
      if (deleted) continue;
      assert.ok(looked.has(`k${i}`), `k${i} was never looked at`);
      if (i % 3 !== 0) assert.ok(map.has(`k${i}`), `k${i} is live and was dropped`);
    }
    for (let s = 1; s <= slices; s++) {
      assert.ok(looked.has(`new${s}`), `new${s} was never looked at`);
      assert.equal(map.has(`new${s}`), s % 2 !== 0, `new${s}`);
    }
  });
});
