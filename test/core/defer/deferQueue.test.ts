import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Redis from "ioredis";
import type { DeferInput, DeferQueue, DeferredMsg } from "../../../src/core/defer/deferQueue";
import { MemoryDeferQueue } from "../../../src/core/defer/memoryDeferQueue";
import { RedisDeferQueue } from "../../../src/core/defer/redisDeferQueue";
import { loadDeferSnapshot, saveDeferSnapshot } from "../../../src/core/defer/deferPersistence";
import { dropPrefix, redisClient, sleep, uniquePrefix } from "../../support/redis";

/** One cap-config's queue as seen by a test: the queue, and the same queue from another instance. */
interface Harness {
  queue: DeferQueue;
  /** the same queue from a second instance (Redis: its own client; memory: the one process) */
  otherInstance(): Promise<DeferQueue>;
  done(): Promise<void>;
}

let seq = 0;
function entry(over: Partial<DeferredMsg> = {}): DeferInput {
  const now = Date.now();
  return { id: `m${++seq}`, gate: "gate-1", dueAt: now - 1000, deferrals: 1, firstDeferredAt: now - 1000, msg: { payload: seq }, ...over };
}

/** Takes until nothing is due, acking each batch. */
async function drain(queue: DeferQueue, batch: number, leaseMs = 30_000): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const msgs = await queue.takeDue(batch, leaseMs);
    if (msgs.length === 0) return ids;
    assert.ok(msgs.length <= batch);
    ids.push(...msgs.map((m) => m.id));
    await queue.ack(msgs.map((m) => m.id));
  }
}

const tricky = {
  text: "héllo wörld — 你好 🚀 مرحبا",
  separators: "\u2028\u2029 \"quoted\" \\ back / slash \n\t\u0000",
  lone: "\ud800 alone",
  numbers: [0, -1, 2.5, 3.141592653589793, 0.1 + 0.2, 1e21, 5e-324, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 1764480000000.123],
  flags: [true, false, null],
  nested: { a: { b: { c: [1, { d: "e" }, [[]]] } }, empty: {}, none: [] },
  "key with spaces:and{braces}|pipes": "v",
};

function deferQueueConformance(label: string, open: () => Promise<Harness>): void {
  describe(`defer queue conformance: ${label}`, function () {
    let h: Harness;
    beforeEach(async () => {
      h = await open();
    });
    afterEach(async () => h.done());

    it("hands out nothing before dueAt, and the msg once it is due", async () => {
      const dueAt = Date.now() + 300;
      const { id } = await h.queue.defer(entry({ dueAt }));
      assert.deepEqual(await h.queue.takeDue(10, 5000), []);
      assert.equal(await h.queue.nextDueAt(), dueAt);
      assert.equal(await h.queue.size(), 1);
      await sleep(dueAt - Date.now() + 30);
      const taken = await h.queue.takeDue(10, 5000);
      assert.deepEqual(taken.map((m) => m.id), [id]);
      assert.equal(taken[0]?.dueAt, dueAt);
    });

    it("hands out the earliest first, at most limit at a time", async () => {
      const now = Date.now();
      const offsets = [-50, -500, -10, -3000, -200, -1];
      for (const [i, off] of offsets.entries()) await h.queue.defer(entry({ id: `e${i}`, dueAt: now + off }));
      const first = await h.queue.takeDue(4, 5000);
      assert.deepEqual(first.map((m) => m.dueAt - now), [-3000, -500, -200, -50]);
      const rest = await h.queue.takeDue(4, 5000);
      assert.deepEqual(rest.map((m) => m.dueAt - now), [-10, -1]);
    });

    it("hands each of 1,000 due msgs to exactly one of two instances taking at once", async () => {
      const other = await h.otherInstance();
      const ids = Array.from({ length: 1000 }, (_, i) => `x${i}`);
      await Promise.all(ids.map((id) => h.queue.defer(entry({ id }))));
      assert.equal(await h.queue.size(), 1000);
      const [a, b] = await Promise.all([drain(h.queue, 50), drain(other, 50)]);
      const all = [...a, ...b];
      assert.equal(all.length, 1000, `taken ${all.length}`);
      assert.equal(new Set(all).size, 1000, "an id was handed out twice");
      assert.deepEqual([...all].sort(), [...ids].sort());
      assert.equal(await h.queue.size(), 0);
      assert.equal(await other.size(), 0);
    });

    it("hands a msg whose lease expired (taken, never acked) to the other instance", async () => {
      const other = await h.otherInstance();
      const { id } = await h.queue.defer(entry());
      const before = Date.now();
      assert.deepEqual((await h.queue.takeDue(10, 200)).map((m) => m.id), [id]);
      assert.deepEqual(await other.takeDue(10, 200), [], "a live lease is nobody else's");
      assert.equal(await other.size(), 1, "a leased msg is still held");
      const next = await other.nextDueAt();
      assert.ok(next !== null && next >= before + 150 && next <= Date.now() + 250, `next ${next}`);
      await sleep(260);
      const again = await other.takeDue(10, 5000);
      assert.deepEqual(again.map((m) => m.id), [id]);
      assert.deepEqual(await h.queue.takeDue(10, 5000), []);
      await other.ack([id]);
      assert.equal(await h.queue.size(), 0);
    });

    it("ack removes taken msgs for good, and leaves a msg that was not taken", async () => {
      const a = await h.queue.defer(entry());
      const bDue = Date.now() + 60_000;
      const b = await h.queue.defer(entry({ dueAt: bDue }));
      await h.queue.ack([b.id, "never-held"]);
      assert.equal(await h.queue.size(), 2, "an ack of a msg not taken removes nothing");
      const taken = await h.queue.takeDue(10, 100);
      assert.deepEqual(taken.map((m) => m.id), [a.id]);
      await h.queue.ack([a.id]);
      assert.equal(await h.queue.size(), 1);
      await sleep(150);
      assert.deepEqual(await h.queue.takeDue(10, 100), [], "an acked msg never comes back");
      assert.equal(await h.queue.nextDueAt(), bDue);
      await h.queue.ack([]);
    });

    it("counts due and leased msgs in size, and reports the next due time", async () => {
      assert.equal(await h.queue.size(), 0);
      assert.equal(await h.queue.nextDueAt(), null);
      const now = Date.now();
      await h.queue.defer(entry({ dueAt: now - 10 }));
      await h.queue.defer(entry({ dueAt: now + 50_000 }));
      await h.queue.defer(entry({ dueAt: now + 40_000 }));
      assert.equal(await h.queue.nextDueAt(), now - 10);
      await h.queue.takeDue(10, 20_000);
      assert.equal(await h.queue.size(), 3);
      const next = await h.queue.nextDueAt();
      assert.ok(next !== null && next > now + 15_000 && next <= Date.now() + 20_000, "the lease expiry comes before the next due msg");
    });

    it("collapses msgs with one key into the held msg, which keeps its dueAt; a msg after the take starts anew", async () => {
      const now = Date.now();
      const first = await h.queue.defer(entry({ id: "c1", dueAt: now - 100, msg: { n: 1 } }), "topic-a");
      assert.deepEqual(first, { id: "c1" });
      for (let n = 2; n <= 5; n++) {
        const r = await h.queue.defer(entry({ id: `c${n}`, dueAt: now - 5000, msg: { n } }), "topic-a");
        assert.deepEqual(r, { id: "c1", collapsedInto: "c1" });
      }
      assert.equal(await h.queue.size(), 1);
      assert.equal(await h.queue.nextDueAt(), now - 100, "the held msg's dueAt did not move");
      const other = await h.queue.defer(entry({ id: "d1", dueAt: now + 60_000 }), "topic-b");
      assert.equal(other.collapsedInto, undefined);
      assert.equal(await h.queue.size(), 2);

      const [taken, ...none] = await h.queue.takeDue(10, 5000);
      assert.equal(none.length, 0);
      assert.equal(taken?.id, "c1");
      assert.equal(taken?.dueAt, now - 100);
      assert.deepEqual(taken?.msg, { n: 1 });
      assert.deepEqual(taken?.collapsed, [{ n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }], "collapsed lists the 4 merged msgs, not the held one");

      const after = await h.queue.defer(entry({ id: "c6", msg: { n: 6 } }), "topic-a");
      assert.deepEqual(after, { id: "c6" }, "the taken msg no longer collects");
      const merged = await h.queue.defer(entry({ id: "c7", msg: { n: 7 }, collapsed: [{ n: 7.1 }] }), "topic-a");
      assert.deepEqual(merged, { id: "c6", collapsedInto: "c6" });
      assert.equal(await h.queue.size(), 3);
      await h.queue.ack(["c1"]);
      const next = await h.queue.takeDue(10, 5000);
      assert.deepEqual(next.map((m) => [m.id, m.collapsed]), [["c6", [{ n: 7 }, { n: 7.1 }]]], "a merged msg brings its own collapsed msgs");
    });

    it("never merges into a msg whose lease expired and came back due: it starts anew", async () => {
      await h.queue.defer(entry({ id: "l1" }), "k");
      await h.queue.takeDue(10, 100);
      await sleep(150);
      const r = await h.queue.defer(entry({ id: "l2" }), "k");
      assert.deepEqual(r, { id: "l2" });
      const taken = await h.queue.takeDue(10, 5000);
      assert.deepEqual(taken.map((m) => m.id).sort(), ["l1", "l2"]);
      assert.ok(taken.every((m) => m.collapsed === undefined));
    });

    it("keeps the msg JSON exactly: nested objects, arrays, numbers, booleans, null, unicode", async () => {
      const dueAt = Date.now() - 1;
      const sent = entry({ id: "json-ü-🚀:{x}", dueAt, expiresAt: dueAt + 1e9, msg: { ...tricky, payload: tricky }, collapsed: [{ before: tricky }] });
      await h.queue.defer(sent, "json");
      await h.queue.defer(entry({ msg: { later: tricky } }), "json");
      const [taken] = await h.queue.takeDue(1, 5000);
      const expected = JSON.parse(JSON.stringify({ ...sent, collapsed: [{ before: tricky }, { later: tricky }] })) as DeferredMsg;
      assert.deepEqual(taken, expected);
      assert.equal((taken?.msg.numbers as number[])[3], Math.PI);
      assert.deepEqual((taken?.msg.nested as { none: unknown }).none, []);
    });

    it("generates an id when none is given", async () => {
      const { id: _omit, ...rest } = entry();
      void _omit;
      const { id } = await h.queue.defer(rest);
      assert.match(id, /^[0-9a-f-]{36}$/);
      const { id: id2 } = await h.queue.defer({ ...rest, id: "" });
      assert.notEqual(id2, id);
      assert.deepEqual((await h.queue.takeDue(10, 5000)).map((m) => m.id).sort(), [id, id2].sort());
    });

    it("a msg deferred again under its id before its ack is a new deferral the ack leaves alone", async () => {
      await h.queue.defer(entry({ id: "r1", deferrals: 1 }));
      const [taken] = await h.queue.takeDue(10, 5000);
      assert.equal(taken?.id, "r1");
      // the release sent it back through the chain, and a gate deferred it again
      await h.queue.defer({ ...(taken as DeferredMsg), deferrals: 2, dueAt: Date.now() - 1 });
      await h.queue.ack(["r1"]);
      assert.equal(await h.queue.size(), 1);
      const again = await h.queue.takeDue(10, 5000);
      assert.deepEqual(again.map((m) => [m.id, m.deferrals]), [["r1", 2]]);
    });

    it("hands out a msg at its expiresAt when that comes before its dueAt", async () => {
      const now = Date.now();
      await h.queue.defer(entry({ id: "exp", dueAt: now + 60_000, expiresAt: now - 5 }));
      await h.queue.defer(entry({ id: "later", dueAt: now + 60_000, expiresAt: now + 120_000 }));
      assert.equal(await h.queue.nextDueAt(), now - 5);
      const taken = await h.queue.takeDue(10, 5000);
      assert.deepEqual(taken.map((m) => [m.id, m.dueAt, m.expiresAt]), [["exp", now + 60_000, now - 5]]);
    });

    it("refuses a bad limit, lease or dueAt", async () => {
      await assert.rejects(h.queue.takeDue(0, 1000), RangeError);
      await assert.rejects(h.queue.takeDue(5, 0), RangeError);
      await assert.rejects(h.queue.defer(entry({ dueAt: Number.NaN })), TypeError);
    });
  });
}

deferQueueConformance("memory", async () => {
  const queue = new MemoryDeferQueue();
  return { queue, otherInstance: async () => queue, done: () => queue.close() };
});

deferQueueConformance("redis", async () => {
  const prefix = uniquePrefix("dq");
  const clients: Redis[] = [redisClient()];
  const first = clients[0] as Redis;
  return {
    queue: new RedisDeferQueue(first, prefix),
    otherInstance: async () => {
      const client = redisClient();
      clients.push(client);
      return new RedisDeferQueue(client, prefix);
    },
    done: async () => {
      await dropPrefix(first, prefix);
      await Promise.all(clients.map((c) => c.quit()));
    },
  };
});

describe("memory defer queue", function () {
  it("uses its clock: nothing at dueAt - 1 ms, the msg at dueAt; a lease ends on the clock too", async () => {
    let now = 1_000_000;
    const queue = new MemoryDeferQueue(() => now);
    await queue.defer(entry({ id: "t", dueAt: 1_000_500 }));
    now = 1_000_499;
    assert.deepEqual(await queue.takeDue(5, 100), []);
    now = 1_000_500;
    assert.deepEqual((await queue.takeDue(5, 100)).map((m) => m.id), ["t"]);
    now = 1_000_599;
    assert.deepEqual(await queue.takeDue(5, 100), []);
    now = 1_000_600;
    assert.deepEqual((await queue.takeDue(5, 100)).map((m) => m.id), ["t"]);
  });

  it("snapshot and restore keep every msg, its merged msgs and its collapse key; a leased msg comes back due", async () => {
    let now = 5_000_000;
    const queue = new MemoryDeferQueue(() => now);
    await queue.defer(entry({ id: "held", dueAt: now - 10, msg: { tricky } }), "k");
    await queue.defer(entry({ id: "merged-1", msg: { n: 1 } }), "k");
    await queue.defer(entry({ id: "future", dueAt: now + 60_000, expiresAt: now + 90_000, msg: { n: 2 } }));
    await queue.defer(entry({ id: "leased", dueAt: now - 20, msg: { n: 3 } }), "k2");
    const leased = await queue.takeDue(1, 60_000);
    assert.deepEqual(leased.map((m) => m.id), ["leased"]);

    const file = join(mkdtempSync(join(tmpdir(), "sgdefer-")), "nested", "defer-queue.json");
    try {
      saveDeferSnapshot(file, queue.snapshot());
      await queue.close();
      const restored = new MemoryDeferQueue(() => now);
      restored.restore(loadDeferSnapshot(file) as NonNullable<ReturnType<typeof loadDeferSnapshot>>);
      assert.equal(await restored.size(), 3);
      assert.equal(await restored.nextDueAt(), now - 20);
      assert.deepEqual(await restored.defer(entry({ id: "merged-2", msg: { n: 4 } }), "k"), { id: "held", collapsedInto: "held" });
      const taken = await restored.takeDue(10, 1000);
      assert.deepEqual(taken.map((m) => m.id), ["leased", "held"], "the leased msg is due again, in its order");
      assert.deepEqual(taken[1]?.msg, JSON.parse(JSON.stringify({ tricky })));
      assert.deepEqual(taken[1]?.collapsed, [{ n: 1 }, { n: 4 }]);
      await restored.ack(taken.map((m) => m.id));
      now += 60_000;
      const future = await restored.takeDue(10, 1000);
      assert.deepEqual(future.map((m) => [m.id, m.expiresAt]), [["future", 5_090_000]]);
      assert.equal(loadDeferSnapshot(join(file, "..", "absent.json")), undefined);
    } finally {
      rmSync(join(file, "..", ".."), { recursive: true, force: true });
    }
  });
});

describe("redis defer queue", function () {
  let prefix: string;
  let admin: Redis;
  beforeEach(() => {
    prefix = uniquePrefix("dqr");
    admin = redisClient();
  });
  afterEach(async () => {
    await dropPrefix(admin, prefix);
    await admin.quit();
  });

  it("keeps every key under the prefix, in one hash tag naming the prefix", async () => {
    const queue = new RedisDeferQueue(admin, prefix);
    await queue.defer(entry({ id: "a" }), "ck");
    await queue.defer(entry({ id: "b" }), "ck");
    await queue.defer(entry({ id: "c", dueAt: Date.now() + 60_000 }), "ck2");
    await queue.takeDue(1, 60_000);
    const keys: string[] = [];
    let cursor = "0";
    do {
      const [next, found] = await admin.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      cursor = next;
      keys.push(...found);
    } while (cursor !== "0");
    assert.deepEqual(keys.map((k) => k.slice(k.lastIndexOf(":") + 1)).sort(), ["at", "ck", "collapse", "lease", "merged", "msg", "due"].sort());
    for (const key of keys) assert.ok(key.startsWith(`${prefix}:{${prefix}:dq}:`), key);
    assert.throws(() => new RedisDeferQueue(admin, "bad{prefix}"));
  });

  it("a restarted instance (new client, new queue, same prefix) takes what the old one deferred, and its dead leases", async () => {
    const oldClient = redisClient();
    const old = new RedisDeferQueue(oldClient, prefix);
    await old.defer(entry({ id: "due", msg: { tricky } }));
    await old.defer(entry({ id: "soon", dueAt: Date.now() + 250 }), "k");
    await old.defer(entry({ id: "merged", msg: { n: 9 } }), "k");
    await old.defer(entry({ id: "taken", dueAt: Date.now() - 5000 }));
    // the old instance takes one and dies holding it
    assert.deepEqual((await old.takeDue(1, 1000)).map((m) => m.id), ["taken"]);
    await old.close();
    await oldClient.quit();

    const freshClient = redisClient();
    const fresh = new RedisDeferQueue(freshClient, prefix);
    try {
      assert.equal(await fresh.size(), 3);
      const first = await fresh.takeDue(10, 5000);
      assert.deepEqual(first.map((m) => m.id), ["due"]);
      assert.deepEqual(first[0]?.msg, JSON.parse(JSON.stringify({ tricky })));
      await sleep(300);
      const soon = await fresh.takeDue(10, 5000);
      assert.deepEqual(soon.map((m) => [m.id, m.collapsed]), [["soon", [{ n: 9 }]]]);
      await fresh.ack([...first, ...soon].map((m) => m.id));
      assert.equal(await fresh.size(), 1, "the msg the dead instance holds waits for its lease");
      await sleep(800);
      const dead = await fresh.takeDue(10, 5000);
      assert.deepEqual(dead.map((m) => m.id), ["taken"]);
      await fresh.ack(["taken"]);
      assert.equal(await fresh.size(), 0);
    } finally {
      await freshClient.quit();
    }
  });

  it("measures msgs deferred and taken per second through one Redis", async function () {
    this.timeout(60_000);
    const queue = new RedisDeferQueue(admin, prefix);
    const n = 20_000;
    const payload = { text: "Your code is 123456", to: "+15550001111", meta: { campaign: "camp_789", tags: ["a", "b"] } };
    let t = performance.now();
    const now = Date.now();
    for (let from = 0; from < n; from += 1000) {
      await Promise.all(Array.from({ length: 1000 }, (_, i) => queue.defer(entry({ id: `p${from + i}`, dueAt: now - 1, msg: payload }))));
    }
    const deferMs = performance.now() - t;
    t = performance.now();
    let taken = 0;
    for (;;) {
      const msgs = await queue.takeDue(100, 30_000);
      if (msgs.length === 0) break;
      taken += msgs.length;
      await queue.ack(msgs.map((m) => m.id));
    }
    const takeMs = performance.now() - t;
    assert.equal(taken, n);
    console.log(`      defer: ${n} msgs in ${deferMs.toFixed(0)} ms = ${Math.round((n * 1000) / deferMs)} msgs/s (1000 in flight); takeDue(100)+ack: ${Math.round((n * 1000) / takeMs)} msgs/s (one taker)`);
  });
});
