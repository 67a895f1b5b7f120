import assert from "node:assert/strict";
import { MemoryStore } from "../../src/core/store/memoryStore";
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
});
