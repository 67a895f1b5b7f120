import assert from "node:assert/strict";
import type Redis from "ioredis";
import type { DeferQueue, DeferredMsg } from "../../../src/core/hold/heldQueue";
import { DeferPoller } from "../../../src/core/hold/poller";
import { MemoryDeferQueue } from "../../../src/core/hold/memoryHeldQueue";
import { RedisDeferQueue } from "../../../src/redis/redisHeldQueue";
import { releaseId } from "../../../src/core/hold/heldIds";
import { dropPrefix, redisClient, sleep, uniquePrefix } from "../../support/redis";

let seq = 0;
function deferred(over: Partial<DeferredMsg> = {}): DeferredMsg {
  const now = Date.now();
  return { id: `p${++seq}`, gate: "g", dueAt: now - 1, deferrals: 1, firstDeferredAt: now, msg: { payload: seq }, ...over };
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** A queue that counts takes in flight, to prove a poller never runs two at once. */
function watched(queue: DeferQueue): { queue: DeferQueue; maxInFlight: () => number } {
  let inFlight = 0;
  let max = 0;
  const proxy: DeferQueue = {
    defer: (e, k) => queue.defer(e, k),
    deferMany: (items) => queue.deferMany(items),
    dropExpired: (limit) => queue.dropExpired(limit),
    takeTagged: (tag, limit, leaseMs) => queue.takeTagged(tag, limit, leaseMs),
    takeDue: async (limit, leaseMs) => {
      inFlight++;
      max = Math.max(max, inFlight);
      try {
        return await queue.takeDue(limit, leaseMs);
      } finally {
        inFlight--;
      }
    },
    ack: (ids) => queue.ack(ids),
    scan: (limit) => queue.scan(limit),
    size: () => queue.size(),
    nextDueAt: () => queue.nextDueAt(),
    close: () => queue.close(),
  };
  return { queue: proxy, maxInFlight: () => max };
}

function pollerSuite(label: string, open: () => Promise<{ queue: DeferQueue; done: () => Promise<void> }>): void {
  describe(`defer poller: ${label}`, function () {
    let queue: DeferQueue;
    let done: () => Promise<void>;
    const pollers: DeferPoller[] = [];
    beforeEach(async () => {
      ({ queue, done } = await open());
    });
    afterEach(async () => {
      await Promise.all(pollers.splice(0).map((p) => p.stop()));
      await done();
    });

    it("releases a msg once its dueAt passes, never before, and acks it", async () => {
      const released: { id: string; at: number }[] = [];
      const poller = new DeferPoller({
        queue, leaseMs: 5000, batch: 10, idleMs: 250,
        onDue: async (msgs) => {
          for (const m of msgs) released.push({ id: m.id, at: Date.now() });
        },
      });
      pollers.push(poller);
      poller.start();
      await sleep(30);
      const dueAt = Date.now() + 300;
      await queue.defer(deferred({ id: "soon", dueAt }));
      await until(() => released.length > 0, 2000, "the release");
      assert.deepEqual(released.map((r) => r.id), ["soon"]);
      const at = (released[0] as { at: number }).at;
      assert.ok(at >= dueAt, `released ${dueAt - at} ms early`);
      assert.ok(at <= dueAt + 300, `released ${at - dueAt} ms late (idleMs 250)`);
      await until(async () => (await queue.size()) === 0, 1000, "the ack");
      await sleep(100);
      assert.equal(released.length, 1);
    });

    it("keeps a batch whose release failed: nothing acked, it comes back after the lease", async () => {
      const attempts: string[][] = [];
      const errors: unknown[] = [];
      const poller = new DeferPoller({
        queue, leaseMs: 200, batch: 10, idleMs: 50,
        onDue: async (msgs) => {
          attempts.push(msgs.map((m) => m.id));
          if (attempts.length === 1) throw new Error("the flow was not ready");
        },
        onError: (err) => errors.push(err),
      });
      pollers.push(poller);
      await queue.defer(deferred({ id: "f1" }));
      await queue.defer(deferred({ id: "f2" }));
      const started = Date.now();
      poller.start();
      await until(() => attempts.length >= 2, 2000, "the second attempt");
      assert.ok(Date.now() - started >= 190, "the retry waited for the lease");
      assert.deepEqual(attempts.map((ids) => [...ids].sort()), [["f1", "f2"], ["f1", "f2"]]);
      assert.equal(errors.length, 1);
      await until(async () => (await queue.size()) === 0, 1000, "the ack");
    });

    for (const [label, count] of [["one msg", 1], ["a burst of 5,000 msgs due at once", 5000]] as const) {
      it(`retries an ack that failed (a connection reset): ${label} released once, not again after the lease`, async function () {
        this.timeout(20_000);
        const released: string[] = [];
        const errors: unknown[] = [];
        let failures = 1;
        const flaky: DeferQueue = {
          ...watched(queue).queue,
          ack: async (ids) => {
            if (failures-- > 0) throw new Error("read ECONNRESET");
            return queue.ack(ids);
          },
        };
        const poller = new DeferPoller({
          queue: flaky, leaseMs: 600, batch: 500, idleMs: 20, ackRetryMs: 20,
          onDue: async (msgs) => { released.push(...msgs.map((m) => m.id)); },
          onError: (err) => errors.push(err),
        });
        pollers.push(poller);
        await queue.deferMany(Array.from({ length: count }, (_, i) => ({ entry: deferred({ id: `ack-${i}` }) })));
        poller.start();
        await until(async () => released.length >= count && (await queue.size()) === 0, 15_000, "every release and ack");
        await sleep(1200); // past the lease: a batch whose ack was lost would be back by now
        assert.equal(released.length, count, `released ${released.length} for ${count} msgs`);
        assert.equal(new Set(released).size, count);
        assert.deepEqual(errors, [], "a retried ack that succeeds is no error");
      });
    }

    it("gives up on an ack that keeps failing near the lease's end: the batch comes back with the same release_id", async function () {
      this.timeout(10_000);
      const released: DeferredMsg[] = [];
      const errors: string[] = [];
      let failing = true;
      const broken: DeferQueue = {
        ...watched(queue).queue,
        ack: async (ids) => {
          if (failing) throw new Error("read ECONNRESET");
          return queue.ack(ids);
        },
      };
      const poller = new DeferPoller({
        queue: broken, leaseMs: 500, batch: 10, idleMs: 20, ackRetryMs: 20,
        onDue: async (msgs) => {
          released.push(...msgs);
          if (released.length >= 2) failing = false;
        },
        onError: (err) => errors.push((err as Error).message),
      });
      pollers.push(poller);
      await queue.defer(deferred({ id: "stuck", deferrals: 3 }));
      const started = Date.now();
      poller.start();
      await until(async () => released.length >= 2 && (await queue.size()) === 0, 5000, "the second release and its ack");
      assert.ok(Date.now() - started >= 450, "it came back only when the lease ended");
      assert.equal(errors.length, 1);
      assert.match(errors[0] ?? "", /could not ack 1 released msg\(s\) after \d+ attempt\(s\)/);
      const [first, second] = released;
      assert.equal(releaseId(first), releaseId(second));
      assert.notEqual(releaseId(first), releaseId({ ...(first), deferrals: 4 }));
    });

    it("stop() resolves after the round in progress, and no take starts after it", async () => {
      let calls = 0;
      const poller = new DeferPoller({
        queue, leaseMs: 5000, batch: 10, idleMs: 20,
        onDue: async () => {
          calls++;
          await sleep(200);
        },
      });
      pollers.push(poller);
      await queue.defer(deferred({ id: "s1" }));
      poller.start();
      await until(() => calls === 1, 1000, "the release to begin");
      const stopping = Date.now();
      await poller.stop();
      assert.ok(Date.now() - stopping >= 150, "stop waited for onDue");
      assert.equal(await queue.size(), 0, "the round finished with its ack");
      assert.equal(poller.running, false);
      await queue.defer(deferred({ id: "s2" }));
      await sleep(150);
      assert.equal(calls, 1);
      assert.equal(await queue.size(), 1);
      poller.start();
      await until(() => calls === 2, 1000, "the release after a restart");
    });
  });
}

pollerSuite("memory", async () => {
  const queue = new MemoryDeferQueue({ gate: "g" });
  return { queue, done: () => queue.close() };
});

pollerSuite("redis", async () => {
  const prefix = uniquePrefix("dqp");
  const client = redisClient();
  return {
    queue: new RedisDeferQueue(client, { keyPrefix: prefix, configId: "cfg", gate: "g" }),
    done: async () => {
      await dropPrefix(client, prefix);
      await client.quit();
    },
  };
});

describe("defer pollers on one Redis", function () {
  let prefix: string;
  let clients: Redis[];
  beforeEach(() => {
    prefix = uniquePrefix("dqp2");
    clients = [redisClient(), redisClient()];
  });
  afterEach(async () => {
    await dropPrefix(clients[0], prefix);
    await Promise.all(clients.map((c) => c.quit()));
  });

  it("two pollers (two instances) release 1,000 msgs exactly once, one take at a time each", async () => {
    const released: string[] = [];
    const perPoller = [0, 0];
    const watchers = clients.map((c) => watched(new RedisDeferQueue(c, { keyPrefix: prefix, configId: "cfg", gate: "g" })));
    const pollers = watchers.map((w, i) => new DeferPoller({
      queue: w.queue, leaseMs: 10_000, batch: 50, idleMs: 50,
      onDue: async (msgs) => {
        perPoller[i] = perPoller[i] + msgs.length;
        released.push(...msgs.map((m) => m.id));
        await sleep(1); // a release takes a moment, so the two interleave
      },
    }));
    const feeder = new RedisDeferQueue(clients[0], { keyPrefix: prefix, configId: "cfg", gate: "g" });
    const ids = Array.from({ length: 1000 }, (_, i) => `r${i}`);
    const now = Date.now();
    // half due now, half spread over the next 300 ms while both pollers run
    await Promise.all(ids.slice(0, 500).map((id) => feeder.defer(deferred({ id, dueAt: now - 1 }))));
    for (const p of pollers) p.start();
    await Promise.all(ids.slice(500).map((id, i) => feeder.defer(deferred({ id, dueAt: now + (i % 300) }))));
    await until(async () => released.length >= 1000 && (await feeder.size()) === 0, 10_000, "every release");
    await sleep(100);
    await Promise.all(pollers.map((p) => p.stop()));
    assert.equal(released.length, 1000, `released ${released.length}`);
    assert.equal(new Set(released).size, 1000, "a msg was released twice");
    assert.deepEqual([...released].sort(), [...ids].sort());
    for (const w of watchers) assert.equal(w.maxInFlight(), 1);
    console.log(`      released by poller 1: ${perPoller[0]}, poller 2: ${perPoller[1]}`);
  });
});
