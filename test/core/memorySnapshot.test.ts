import assert from "node:assert/strict";
import { MemoryStore, type MemorySnapshot } from "../../src/core/store/memoryStore";
import { gcraLimit } from "../../src/core/throughput/gcra";
import { ceilingKey } from "../../src/core/throughput/throughputKeys";
import type { ThroughputOutcome } from "../../src/core/store/admissionStore";
import { totalCounterKey } from "../../src/core/caps/keys";
import type { QuotaLimit, QuotaOutcome, QuotaRequest } from "../../src/core/caps/totals/quotaStep";

/** A saved memory store read back as the next process (or deployment) reads it: through JSON. */
function reloaded(store: MemoryStore, clock?: () => number): MemoryStore {
  const next = new MemoryStore(clock);
  next.restore(JSON.parse(JSON.stringify(store.snapshot())) as MemorySnapshot);
  return next;
}

function answered(r: unknown): ThroughputOutcome {
  if (r instanceof Error) throw r;
  return r as ThroughputOutcome;
}

describe("memory store snapshot: throughput ceilings", () => {
  const key = ceilingKey("snap", "acme", { kind: "org" });
  const limit = gcraLimit(20, 1, 1);
  const reserve = async (store: MemoryStore, n: number): Promise<ThroughputOutcome[]> =>
    (await store.throughput(Array.from({ length: n }, () => ({ key, ...limit, maxWaitUs: 60_000_000 })))).map(answered);
  const instant = (o: ThroughputOutcome): number => o.nowUs + o.waitUs;

  it("keeps a queue-mode ceiling's reserved instants: the next store hands out the instant after the last one, not now again", async () => {
    const before = new MemoryStore();
    const held = await reserve(before, 40);
    const last = instant(held[39]);
    assert.ok(last - held[0].nowUs >= 1_950_000, "40 at 20/s reach 2 s ahead");
    const after = reloaded(before);
    const [next] = await reserve(after, 1);
    assert.ok(next, "answered");
    assert.ok(Math.abs(instant(next) - (last + limit.emissionUs)) <= 1_000, `next instant ${instant(next) - last} µs after the last held one (T = ${limit.emissionUs})`);
    await Promise.all([before.close(), after.close()]);
  });

  it("keeps 5,000 ceilings' instants of one burst, each apart", async () => {
    const before = new MemoryStore();
    const keys = Array.from({ length: 5_000 }, (_, i) => ceilingKey("snap", `org${i}`, { kind: "org" }));
    // each ceiling 3 deep: its TAT 100 ms past now
    const requests = keys.flatMap((k) => [0, 1, 2].map(() => ({ key: k, ...limit, maxWaitUs: 60_000_000 })));
    const first = (await before.throughput(requests)).map(answered);
    const after = reloaded(before);
    const next = (await after.throughput(keys.map((k) => ({ key: k, ...limit, maxWaitUs: 60_000_000 })))).map(answered);
    next.forEach((o, i) => {
      const last = instant(first[3 * i + 2]);
      assert.ok(instant(o) >= last + limit.emissionUs - 1_000, `ceiling ${i}: next instant ${instant(o) - last} µs after its last`);
    });
    await Promise.all([before.close(), after.close()]);
  });

  it("drops a ceiling whose TAT has passed by the time it is read back, and reads a file saved before ceilings were kept", async () => {
    let now = 1_000_000;
    const clock = (): number => now;
    const before = new MemoryStore(clock);
    await reserve(before, 3);
    const saved = JSON.parse(JSON.stringify(before.snapshot())) as MemorySnapshot;
    assert.equal(saved.ceilings?.length, 1);
    now += 60_000;
    const later = new MemoryStore(clock);
    later.restore(saved);
    assert.equal(later.snapshot().ceilings?.length, 0, "a TAT long past means nothing");
    const old = new MemoryStore(clock);
    const { ceilings: _dropped, ...withoutCeilings } = saved;
    old.restore(withoutCeilings);
    assert.deepEqual((await reserve(old, 2)).map((o) => o.waitUs), [0, limit.emissionUs]);
    await Promise.all([before.close(), later.close(), old.close()]);
  });
});

describe("memory store snapshot: total caps' spends given back", () => {
  const LIFETIME: QuotaLimit = { max: 3, windowMs: 0, bucketMs: 0, calendar: false };
  const call = async (store: MemoryStore, key: string, work: Partial<QuotaRequest>): Promise<QuotaOutcome> => {
    const [r] = await store.quota([{ key, leaseId: "", leaseMs: 10_000, ...LIFETIME, spend: 0, record: 0, refunds: [], frees: [], keep: -1, want: 0, ...work }]);
    if (r === undefined || r instanceof Error) throw r ?? new Error("no answer");
    return r;
  };

  it("gives a spend back once, before and after the store is read back (a redeploy): the total never passes its max", async () => {
    const key = totalCounterKey("snap", "acme", "ad-total", ["ad 1"]);
    const before = new MemoryStore();
    const spent = await call(before, key, { spend: 3 });
    assert.equal(spent.accepted, 3);
    const back = { bucket: spent.bucket, id: "a", atMs: spent.nowMs };
    assert.deepEqual([(await call(before, key, { frees: [back] })).given, (await call(before, key, { spend: 1 })).accepted], ["1", 1]);
    const after = reloaded(before);
    const again = await call(after, key, { frees: [back] });
    assert.deepEqual([again.given, again.used], ["0", 3], "the spend was given back before the redeploy: not again");
    assert.equal((await call(after, key, { spend: 1 })).accepted, 0, "the total is full");
    await Promise.all([before.close(), after.close()]);
  });

  it("keeps the given-back spends of a burst: 2,000 counters each given back once, none again after the store is read back", async () => {
    const before = new MemoryStore();
    const keys = Array.from({ length: 2_000 }, (_, i) => totalCounterKey("snap", "acme", "ad-total", [`ad ${i}`]));
    const spends = await before.quota(keys.map((key) => ({ key, leaseId: "", leaseMs: 10_000, ...LIFETIME, spend: 3, record: 0, refunds: [], frees: [], keep: -1, want: 0 })));
    const backs = spends.map((r, i) => {
      if (r instanceof Error) throw r;
      return { key: keys[i], back: { bucket: r.bucket, id: `s${i}`, atMs: r.nowMs } };
    });
    const frees = (store: MemoryStore) => store.quota(backs.map(({ key, back }) => ({ key, leaseId: "", leaseMs: 10_000, ...LIFETIME, spend: 0, record: 0, refunds: [], frees: [back], keep: -1, want: 0 })));
    assert.ok((await frees(before)).every((r) => !(r instanceof Error) && r.given === "1"));
    const after = reloaded(before);
    const twice = (await frees(after)).filter((r) => r instanceof Error || r.given !== "0");
    assert.equal(twice.length, 0, `${twice.length} spends given back a second time`);
    await Promise.all([before.close(), after.close()]);
  });
});
