import assert from "node:assert/strict";
import type Redis from "ioredis";
import type { DeferInput, DeferQueue, DeferredMsg } from "../../src/core/hold/heldQueue";
import { LocalGateRegistry } from "../../src/core/hold/gateRegistry";
import { RedisGateRegistry } from "../../src/redis/gateRegistry";
import { MemoryDeferStore } from "../../src/core/hold/memoryHeldQueues";
import { RedisDeferQueue } from "../../src/redis/redisHeldQueue";
import { Deferrals, type DeferralsOptions } from "../../src/core/hold/deferrals";
import { dropPrefix, redisClient, sleep, uniquePrefix } from "../support/redis";

/** One cap-config's deferrals on some instance (memory: the one process; Redis: its own client). */
type Instance = (warnings: string[]) => Deferrals;

function held(gate: string, id: string, over: Partial<DeferredMsg> = {}): DeferInput {
  const now = Date.now();
  return { id, gate, dueAt: now - 1, deferrals: 1, firstDeferredAt: now, msg: { messageId: id }, ...over };
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** The queue of gate "g", counting its deferMany calls. */
function countingCalls(deferrals: Deferrals): { queue: DeferQueue; calls: { deferMany: number } } {
  const queue = deferrals.queueOf("g");
  const deferMany = queue.deferMany.bind(queue);
  const calls = { deferMany: 0 };
  queue.deferMany = (items) => {
    calls.deferMany++;
    return deferMany(items);
  };
  return { queue, calls };
}

const FAST: Partial<DeferralsOptions> = { polling: { idleMs: 20, leaseMs: 2000 }, beatMs: 50, sweepMs: 100 };

function deferralsSuite(label: string, setup: () => Promise<{ instance: Instance; done: () => Promise<void> }>): void {
  describe(`deferrals of one cap-config (${label})`, function () {
    this.timeout(20_000);
    let instance: Instance;
    let done: () => Promise<void>;
    const open: Deferrals[] = [];
    beforeEach(async () => {
      ({ instance, done } = await setup());
    });
    afterEach(async () => {
      await Promise.all(open.splice(0).map((d) => d.close()));
      await done();
    });
    const start = (warnings: string[] = []) => {
      const d = instance(warnings);
      open.push(d);
      return d;
    };

    it("releases each gate's msgs to that gate only, from a burst held in one call per gate", async () => {
      const deferrals = start();
      const got: Record<string, string[]> = { g1: [], g2: [] };
      deferrals.register("g1", (m) => { got.g1?.push(m.id); });
      deferrals.register("g2", (m) => { got.g2?.push(m.id); });
      const items = Array.from({ length: 3000 }, (_, i) => ({ entry: held(i % 2 ? "g2" : "g1", `m${i}`) }));
      items.splice(1, 0, { entry: held("g1", "bad", { dueAt: Number.NaN }) });
      const results = await deferrals.holdMany(items);
      assert.ok(results[1] instanceof TypeError);
      assert.equal(results.filter((r) => r instanceof Error).length, 1);
      await until(() => (got.g1?.length ?? 0) + (got.g2?.length ?? 0) >= 3000, 10_000, "every release");
      assert.ok(got.g1?.every((id) => Number(id.slice(1)) % 2 === 0));
      assert.ok(got.g2?.every((id) => Number(id.slice(1)) % 2 === 1));
      assert.equal(new Set([...(got.g1 ?? []), ...(got.g2 ?? [])]).size, 3000);
    });

    it("leaves a gate's msgs alone while it runs nowhere, then drops those past their deadline, naming them", async () => {
      const warnings: string[] = [];
      const deferrals = start(warnings);
      const got: string[] = [];
      const unregister = deferrals.register("gone", (m) => { got.push(m.id); });
      deferrals.register("stays", () => undefined);
      const now = Date.now();
      await deferrals.hold(held("gone", "soon-expired", { dueAt: now + 60_000, deadline: now + 300 }));
      await deferrals.hold(held("gone", "later", { dueAt: now + 60_000, deadline: now + 60_000 }));
      await sleep(120); // a beat: the gate runs here
      await unregister();
      // past the deadline, past the registry's ttl (400 ms here): dropped by a sweep, with a warning
      await until(() => warnings.some((w) => /dropped 1 held msg/.test(w)), 5000, "the drop");
      assert.match(warnings.find((w) => /dropped/.test(w)) ?? "", /gate gone, which runs on no instance, .*messageIds soon-expired/);
      assert.equal(await deferrals.queueOf("gone").size(), 1, "the msg whose deadline is still ahead waits for its gate");
      assert.equal(got.length, 0);
      // the gate comes back: it releases what is left
      deferrals.register("gone", (m) => { got.push(m.id); });
      await deferrals.hold(held("gone", "now", { dueAt: Date.now() - 1 }));
      await until(() => got.length === 1, 3000, "the release");
      assert.deepEqual(got, ["now"]);
    });

    it("tries a msg.reset's ack again after a fault: the msgs it took do not come back when their lease ends", async () => {
      const warnings: string[] = [];
      const deferrals = start(warnings);
      const due = Date.now() + 60_000;
      for (const id of ["a", "b", "c"]) await deferrals.hold(held("g", id, { dueAt: due }), { tag: "t" });
      const queue = deferrals.queueOf("g");
      const ack = queue.ack.bind(queue);
      let faults = 0;
      queue.ack = async (ids) => {
        if (faults++ === 0) throw new Error("connection reset");
        return ack(ids);
      };
      const handedOut: string[] = [];
      assert.equal(await deferrals.takeTagged("g", "t", (m) => { handedOut.push(m.id); }), 3);
      assert.deepEqual(handedOut.sort(), ["a", "b", "c"]);
      assert.ok(faults >= 2, "the ack was tried again");
      // past the 2 s lease: a lost ack would put all three back in the queue, to be handed out a second time
      await sleep(2300);
      assert.equal(await queue.size(), 0);
      assert.equal(await deferrals.takeTagged("g", "t", (m) => { handedOut.push(m.id); }), 0);
      assert.deepEqual(warnings, []);
    });

    it("hands back what a gate gives back in one turn in one queue call: 2,000 msgs one by one, each caller told only of its own msg left", async () => {
      const deferrals = start();
      const { queue, calls } = countingCalls(deferrals);
      const now = Date.now();
      const answers = await Promise.all(Array.from({ length: 2000 }, (_, i) => deferrals.handBackInTurn("g", [{ entry: held("g", `m${i}`, { dueAt: now + 60_000 }) }])));
      assert.equal(calls.deferMany, 1);
      assert.ok(answers.every((a) => a === undefined));
      assert.equal(await queue.size(), 2000);
      // one the queue refuses (for what it is: not tried again): only its caller hears of it, with its own msg
      const bad = { entry: held("g", "bad", { dueAt: Number.NaN }) };
      const [good, refused] = await Promise.all([deferrals.handBackInTurn("g", [{ entry: held("g", "ok", { dueAt: now + 60_000 }) }]), deferrals.handBackInTurn("g", [bad])]);
      assert.equal(good, undefined);
      assert.deepEqual(refused?.left, [bad]);
      assert.equal(await queue.size(), 2001);
    });

    it("does not try again to hand back a msg the queue refuses for what it is (JSON cannot hold it): one call, not one every 200 ms for 5 s", async () => {
      const deferrals = start();
      const { queue, calls } = countingCalls(deferrals);
      const loop: Record<string, unknown> = { n: 1 };
      loop.self = loop;
      const bad = { entry: held("g", "loop", { dueAt: Date.now() + 60_000, msg: loop }) };
      const good = { entry: held("g", "fine", { dueAt: Date.now() + 60_000 }) };
      const failed = await deferrals.handBack("g", [bad, good]);
      assert.equal(calls.deferMany, 1);
      assert.deepEqual(failed?.left, [bad]);
      assert.match(String(failed?.error.message), /msg: cannot be held in the defer queue/);
      assert.equal(await queue.size(), 1);
    });

    it("drops, naming them, the msgs a gate handed back as it closed for good (it never ran again) once past their deadline", async () => {
      const warnings: string[] = [];
      const deferrals = start(warnings);
      // a gate that never held anything here, that closes handing back (parking) a msg, and never runs again
      const now = Date.now();
      assert.equal(await deferrals.handBack("parked-only", [{ entry: held("parked-only", "kept", { dueAt: now, deadline: now + 300 }) }]), undefined);
      await until(() => warnings.some((w) => /dropped 1 held msg/.test(w)), 5000, "the drop");
      assert.match(warnings.find((w) => /dropped/.test(w)) ?? "", /gate parked-only, which runs on no instance, .*messageIds kept/);
      assert.equal(await deferrals.queueOf("parked-only").size(), 0);
    });

    it("keeps what a gate held while it was closed, and releases it once the gate is back", async () => {
      const deferrals = start();
      const first: string[] = [];
      const unregister = deferrals.register("g", (m) => { first.push(m.id); });
      await unregister();
      await deferrals.hold(held("g", "x"));
      await sleep(100);
      const second: string[] = [];
      deferrals.register("g", (m) => { second.push(m.id); });
      await until(() => second.length === 1, 1000, "the release by the gate redeployed");
      assert.deepEqual(first, []);
    });
  });
}

deferralsSuite("memory", async () => {
  const store = new MemoryDeferStore({ warn: () => undefined });
  return {
    instance: (warnings) => new Deferrals({
      ...FAST, openQueue: (gate) => store.queue(gate), registry: new LocalGateRegistry(() => store.gates()), warn: (t) => warnings.push(t),
    }),
    done: async () => store.close(),
  };
});

deferralsSuite("redis", async () => {
  const prefix = uniquePrefix("dfr");
  const clients: Redis[] = [];
  return {
    instance: (warnings) => {
      const client = redisClient();
      clients.push(client);
      return new Deferrals({
        ...FAST,
        openQueue: (gate) => new RedisDeferQueue(client, { keyPrefix: prefix, configId: "cfg", gate }),
        registry: new RedisGateRegistry(client, prefix, "cfg", 400),
        warn: (t) => warnings.push(t),
      });
    },
    done: async () => {
      const admin = redisClient();
      await dropPrefix(admin, prefix);
      await admin.quit();
      await Promise.all(clients.map((c) => c.quit()));
    },
  };
});

describe("deferrals on two instances sharing one Redis", function () {
  this.timeout(20_000);
  it("never drops the msgs of a gate another instance runs, even past their deadline: that instance releases them", async () => {
    const prefix = uniquePrefix("dfr2");
    const clients = [redisClient(), redisClient()];
    const warnings: string[] = [];
    const make = (client: Redis) => new Deferrals({
      ...FAST,
      openQueue: (gate) => new RedisDeferQueue(client, { keyPrefix: prefix, configId: "cfg", gate }),
      registry: new RedisGateRegistry(client, prefix, "cfg", 400),
      warn: (t) => warnings.push(t),
    });
    const [a, b] = clients.map(make) as [Deferrals, Deferrals];
    try {
      const released: DeferredMsg[] = [];
      b.register("only-on-b", (m) => { released.push(m); });
      a.register("other", () => undefined);
      const now = Date.now();
      // held through a, due later than its deadline has passed: b hands it to its gate (which sends it to skipped)
      await a.hold(held("only-on-b", "late", { dueAt: now + 300, deadline: now + 100 }));
      await until(() => released.length === 1, 5000, "b's release");
      await sleep(500);
      assert.deepEqual(released.map((m) => m.id), ["late"]);
      assert.deepEqual(warnings.filter((w) => /dropped/.test(w)), []);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await dropPrefix(clients[0], prefix);
      await Promise.all(clients.map((c) => c.quit()));
    }
  });
});

describe("deferrals: a gate closing while its batch is taken", function () {
  it("puts the batch back at once (not after the lease) for the gate's next poller", async () => {
    const store = new MemoryDeferStore({ warn: () => undefined });
    let unregister: (() => Promise<void>) | undefined;
    let closeDuringTake = true;
    const deferrals = new Deferrals({
      ...FAST, polling: { idleMs: 20, leaseMs: 60_000 },
      openQueue: (gate) => {
        const queue = store.queue(gate);
        return Object.assign(Object.create(queue) as typeof queue, {
          takeDue: async (limit: number, leaseMs: number) => {
            const taken = await queue.takeDue(limit, leaseMs);
            if (taken.length > 0 && closeDuringTake) {
              closeDuringTake = false;
              void unregister?.();
            }
            return taken;
          },
        });
      },
      registry: new LocalGateRegistry(() => store.gates()),
      warn: () => undefined,
    });
    try {
      const first: string[] = [];
      unregister = deferrals.register("g", (m) => { first.push(m.id); });
      await deferrals.hold(held("g", "x"));
      await until(() => !closeDuringTake, 2000, "the take");
      await sleep(100);
      const second: string[] = [];
      deferrals.register("g", (m) => { second.push(m.id); });
      await until(() => second.length === 1, 2000, "the release well before the 60 s lease ends");
      assert.deepEqual(first, []);
    } finally {
      await deferrals.close();
      store.close();
    }
  });
});
