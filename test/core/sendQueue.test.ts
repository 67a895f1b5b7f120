import assert from "node:assert/strict";
import Redis from "ioredis";
import { SendFieldError, StoreUnavailableError } from "../../src/core/errors";
import { StoreAccess } from "../../src/core/store/storeAccess";
import type { ClaimOutcome, ClaimRequest, Settled } from "../../src/core/store/admissionStore";
import { RedisStore } from "../../src/redis/redisStore";
import type { SendQueue } from "../../src/core/sendQueue/sendQueue";
import { sleep, uniquePrefix } from "../support/redis";
import { OwnRedis } from "../support/redisServer";
import { collectGarbage } from "../support/gc";

const CAP = [{ field: "c", windowMs: 60_000, max: 1 }];

describe("core/sendQueue against a real Redis", function () {
  this.timeout(30_000);
  const own = new OwnRedis(0, ["--enable-debug-command", "yes"]);
  let admin: Redis;
  before(async () => {
    await own.start();
    admin = new Redis(own.url);
  });
  after(async () => {
    admin.disconnect();
    await own.stop();
    own.cleanUp();
  });

  /** A StoreAccess on the own Redis whose claim lane records each call: when it went out and how many items it carried. */
  async function open(options: { maxQueued?: number; timeoutMs?: number } = {}) {
    const store = new RedisStore({ url: own.url });
    const warnings: string[] = [];
    const access = new StoreAccess(store, { failMode: "open", timeoutMs: options.timeoutMs ?? 50, maxQueued: options.maxQueued ?? 100_000, warn: (t) => warnings.push(t) });
    const calls: { at: number; items: number }[] = [];
    const lane = access.lane<ClaimRequest, ClaimOutcome>("claim", (s, items): Promise<Settled<ClaimOutcome>[]> => {
      calls.push({ at: performance.now(), items: items.length });
      return s.claim(items);
    });
    await admin.ping();
    for (let i = 0; i < 100 && store.state() !== "ready"; i++) await sleep(20);
    const prefix = uniquePrefix("sq");
    const claim = (i: number, recipient = `r${i}`) => access.submit(lane, { key: `${prefix}:{o|${recipient}}:c`, member: `m${i}`, token: 1, counters: CAP });
    return { store, access, lane, calls, warnings, claim };
  }

  it("answers 5,000 claims submitted in one tick in a few batched calls, in order", async () => {
    const q = await open({ timeoutMs: 2000 });
    const answers = await Promise.all(Array.from({ length: 5000 }, (_, i) => q.claim(i, `r${i % 2500}`)));
    answers.forEach((a, i) => assert.equal(a.allowed, i < 2500, `claim ${i}`));
    assert.ok(q.calls.length <= 40, `${q.calls.length} calls for 5,000 claims`);
    assert.equal(q.calls.reduce((n, c) => n + c.items, 0), 5000);
    await q.store.close();
  });

  it("sends a claim that finds Redis idle at once, and the tick's next 32 while the tick goes on, so Redis works on them as the client queues the rest; one recipient's claims still land in order", async () => {
    const q = await open({ timeoutMs: 2000 });
    const pending: Promise<ClaimOutcome>[] = [];
    let sentBy1st = -1;
    let sentBy40th = -1;
    // claims 32 and 33 are one recipient's, either side of the first batch's end
    for (let i = 0; i < 300; i++) {
      pending.push(q.claim(i, i === 33 ? "r32" : `r${i}`));
      if (i === 0) sentBy1st = q.calls.length;
      if (i === 39) sentBy40th = q.calls.length;
    }
    assert.equal(sentBy1st, 1, "the first claim went out at once: nothing was in flight to gather a batch behind");
    assert.equal(sentBy40th, 2, "the first batch went out before the tick ended");
    assert.deepEqual(q.calls.slice(0, 2).map((c) => c.items), [1, 32]);
    const answers = await Promise.all(pending);
    assert.equal(answers[32]?.allowed, true);
    assert.equal(answers[33]?.allowed, false, "the later claim of r32 was judged after the earlier one");
    assert.equal(answers.filter((a) => a.allowed).length, 299);
    assert.equal(q.calls.reduce((n, c) => n + c.items, 0), 300);
    await q.store.close();
  });

  // 1,500 ms: a burst whose hand-over blocks the loop longer than the store's grace for its first connection
  for (const handOverMs of [200, 1500]) {
    it(`a burst that arrives before the first connection is not timed out by the wait for it, its hand-over blocking the loop ${handOverMs} ms: the timeout starts once the call can be sent`, async () => {
      // a fresh store, not yet connected: the flow was deployed this tick and a split node already sends
      const store = new RedisStore({ url: own.url });
      const access = new StoreAccess(store, { failMode: "open", timeoutMs: 50, maxQueued: 100_000, warn: () => undefined });
      const lane = access.lane<ClaimRequest, ClaimOutcome>("claim", (s, items) => s.claim(items));
      const prefix = uniquePrefix("sq-connect");
      const pending = Array.from({ length: 300 }, (_, i) => access.submit(lane, { key: `${prefix}:{o|r${i}}:c`, member: `m${i}`, token: 1, counters: CAP }));
      // the rest of the burst keeps the event loop busy well past the timeout
      const until = performance.now() + handOverMs;
      while (performance.now() < until) { /* a split node handing over 10,000 msgs */ }
      const settled = await Promise.allSettled(pending);
      const failed = settled.filter((s) => s.status === "rejected").map((s) => (s).reason as StoreUnavailableError);
      assert.deepEqual(failed.map((f) => f.kind), [], "no call timed out waiting for the connection");
      assert.ok(settled.every((s) => s.status === "fulfilled" && s.value.allowed));
      await store.close();
    });
  }

  it("a call sent while its tick goes on (the rest of a burst) is written at once, so the answer waiting when the tick ends is not taken for a timeout", async () => {
    const q = await open({ timeoutMs: 50 });
    await q.claim(-1);
    // the socket's writes, as the client makes them
    const stream = (q.store.client as unknown as { stream: { write: (...args: unknown[]) => boolean } }).stream;
    const write = stream.write.bind(stream);
    const writes: number[] = [];
    stream.write = (...args: unknown[]) => { writes.push(performance.now()); return write(...args); };
    for (let round = 0; round < 3; round++) {
      writes.length = 0;
      const pending = Array.from({ length: 300 }, (_, i) => q.claim(round * 1000 + i));
      // the first batches went out during this tick; the tick then runs far past the timeout
      const until = performance.now() + 200;
      while (performance.now() < until) { /* the rest of a split node's 10,000 msgs */ }
      const tickEnded = performance.now();
      const settled = await Promise.allSettled(pending);
      assert.ok(writes.length > 0 && writes[0] < tickEnded, `round ${round}: a call was written during the tick`);
      const failed = settled.filter((s) => s.status === "rejected").map((s) => ((s).reason as StoreUnavailableError).kind);
      assert.deepEqual(failed, [], `round ${round}`);
      // the next burst arrives in a later turn, as a flow's msgs do: by then the answered batches have left the queue
      // (in the same microtask run, the last batch may still count as in flight and the next burst wait for it)
      await new Promise((resolve) => setImmediate(resolve));
    }
    await q.store.close();
  });

  it("an answer that throws stops neither the batch's other answers nor has any answered twice; its error surfaces once, uncaught", async () => {
    const q = await open({ timeoutMs: 2000 });
    const prefix = uniquePrefix("sq-throw");
    const told = new Array<number>(40).fill(0);
    const surfaced: unknown[] = [];
    // mocha's own handler would fail the test on the error the queue lets surface: swapped out while it does
    const mochas = process.listeners("uncaughtException");
    process.removeAllListeners("uncaughtException");
    process.on("uncaughtException", (err) => surfaced.push(err));
    try {
      await new Promise<void>((resolve) => {
        let left = told.length;
        const tell = (i: number): void => {
          told[i] = told[i] + 1;
          if (--left === 0) resolve();
          if (i === 5) throw new Error("reader 5 fails");
        };
        // one tick: the 40 go in one batch behind the first, and reader 5's throw comes in the middle of its answers
        for (let i = 0; i < told.length; i++) {
          q.access.submitTo(q.lane, { key: `${prefix}:{o|r${i}}:c`, member: `m${i}`, token: 1, counters: CAP }, { resolve: () => tell(i), reject: () => tell(i) });
        }
      });
      await sleep(50);
    } finally {
      process.removeAllListeners("uncaughtException");
      for (const listener of mochas) process.on("uncaughtException", listener);
    }
    assert.deepEqual(told, told.map(() => 1), "each answered once");
    assert.deepEqual(surfaced.map((e) => (e as Error).message), ["reader 5 fails"]);
    await q.store.close();
  });

  it("lets go of each item once it is answered, not thousands of items later (the GC would promote them and copy them in every scavenge)", async () => {
    const q = await open({ timeoutMs: 2000 });
    const refs: WeakRef<ClaimRequest>[] = [];
    // made in a function of its own, so this test's frame holds no item
    const claimOne = async (i: number): Promise<void> => {
      const item: ClaimRequest = { key: `${uniquePrefix("sq-gc")}:{o|r${i}}:c`, member: `m${i}`, token: 1, counters: CAP };
      refs.push(new WeakRef(item));
      await q.access.submit(q.lane, item);
    };
    // a few at a time, as light traffic sends them: the queue never reaches 4,096 items
    for (let i = 0; i < 20; i++) await claimOne(i);
    // a few turns of the loop: an answer's last callbacks (the client's, the timer's) may still run in the turns after it,
    // later on a loaded box (the full suite once saw one item of 20 held after two); the defect held them thousands of items
    for (let round = 0; round < 5 && refs.some((r) => r.deref() !== undefined); round++) {
      await new Promise((resolve) => setImmediate(resolve));
      collectGarbage();
    }
    assert.deepEqual(refs.map((r) => r.deref() === undefined), refs.map(() => true), "no answered item is still held");
    await q.store.close();
  });

  it("holds a half-open circuit's other batches, and the other lanes of the probe's own batch, for the probe's answer: a healthy store takes them all", async () => {
    const q = await open({ timeoutMs: 2000 });
    const other = q.access.lane<ClaimRequest, ClaimOutcome>("other", (s, items) => s.claim(items));
    const prefix = uniquePrefix("sq-probe");
    // a call sent while the circuit was closed, still in flight below: the tick's items gather into batches behind it
    // (an item that finds the store idle goes alone, and the probe's batch would carry one lane)
    const slow = q.access.lane<ClaimRequest, ClaimOutcome>("slow", async (s, items) => { await sleep(1500); return s.claim(items); });
    const inFlight = q.access.submit(slow, { key: `${prefix}:{o|slow}:c`, member: "slow", token: 1, counters: CAP });
    // three timed-out calls open the circuit; after its cool-down the next call is the probe
    for (let i = 0; i < 3; i++) q.access.breaker.settle(false, new StoreUnavailableError("timeout", "store did not answer"));
    await sleep(1100);
    assert.equal(q.access.breaker.state(), "half_open");
    // one tick, two lanes interleaved: the first batch carries both, and only one of its calls can be the probe
    const settled = await Promise.allSettled(Array.from({ length: 600 }, (_, i) => q.access.submit(i % 2 === 0 ? q.lane : other, {
      key: `${prefix}:{o|r${i}}:c`, member: `m${i}`, token: 1, counters: CAP,
    })));
    const failed = settled.filter((r) => r.status === "rejected").map((r) => ((r).reason as StoreUnavailableError).kind);
    assert.deepEqual(failed.slice(0, 3), [], `${failed.length} of 600 failed beside the probe`);
    assert.equal(q.access.breaker.state(), "closed");
    assert.equal((await inFlight).allowed, true);
    await q.store.close();
  });

  it("refuses bounded work past maxQueued as overloaded, warns once per episode, and takes new work once drained", async () => {
    const q = await open({ maxQueued: 100, timeoutMs: 2000 });
    const settled = await Promise.allSettled(Array.from({ length: 300 }, (_, i) => q.claim(i)));
    const overloaded = settled.filter((s) => s.status === "rejected" && (s.reason as StoreUnavailableError).kind === "overloaded");
    assert.equal(overloaded.length, 200);
    assert.equal(settled.filter((s) => s.status === "fulfilled").length, 100);
    assert.equal(q.warnings.filter((w) => w.includes("maxQueued")).length, 1);
    await Promise.allSettled(Array.from({ length: 300 }, (_, i) => q.claim(1000 + i)));
    assert.equal(q.warnings.filter((w) => w.includes("maxQueued")).length, 2, "a second episode, a second warning");
    await q.store.close();
  });

  it("counts msgs waiting in gates' intakes towards maxQueued, and refuses the bounded calls a refused msg makes in its turn, not its give-backs", async () => {
    const q = await open({ maxQueued: 10, timeoutMs: 2000 });
    const queue = q.access.queue as SendQueue;
    queue.waitingMsgs(10);
    assert.equal(queue.full(), true);
    assert.equal(queue.length, 10);
    await assert.rejects(q.claim(0), (err: StoreUnavailableError) => err.kind === "overloaded");
    queue.waitingMsgs(-10);
    const giveBacks = q.access.lane<ClaimRequest, ClaimOutcome>("give-back", (s, items) => s.claim(items), { bounded: false });
    let refused: Promise<unknown> | undefined;
    let givenBack: Promise<unknown> | undefined;
    queue.refusing(() => {
      refused = q.claim(1);
      givenBack = q.access.submit(giveBacks, { key: `${uniquePrefix("sq")}:{o|g}:c`, member: "g", token: 1, counters: CAP });
    });
    await assert.rejects(refused as Promise<unknown>, (err: StoreUnavailableError) => err.kind === "overloaded");
    assert.equal(((await givenBack) as ClaimOutcome).allowed, true, "work already begun is never refused");
    assert.equal((await q.claim(2)).allowed, true, "once it has begun, the next msg is judged");
    await q.store.close();
  });

  it("warns once for an episode whose msgs refused at the door begin after it drained (their refusal starts no new episode)", async () => {
    const q = await open({ maxQueued: 10, timeoutMs: 2000 });
    const queue = q.access.queue as SendQueue;
    queue.waitingMsgs(10);
    // a msg arrives at a gate's full intake: refused at the door, and the episode warned of
    queue.overflowed();
    assert.equal(q.warnings.filter((w) => w.includes("maxQueued")).length, 1);
    // the waiting msgs begin and are answered: the episode is over
    queue.waitingMsgs(-10);
    assert.equal((await q.claim(0)).allowed, true);
    let refused: Promise<unknown> | undefined;
    queue.refusing(() => { refused = q.claim(1); });
    await assert.rejects(refused as Promise<unknown>, (err: StoreUnavailableError) => err.kind === "overloaded");
    assert.equal(q.warnings.filter((w) => w.includes("maxQueued")).length, 1, "the refused msg's turn is its episode's tail, not a new one");
    await q.store.close();
  });

  it("answers an item's own refusal (a msg the queue cannot hold) as that item's answer: the breaker neither counts it nor forgets the faults before it", async () => {
    const store = new RedisStore({ url: own.url });
    const access = new StoreAccess(store, { failMode: "open", timeoutMs: 1000, maxQueued: 1000, warn: () => undefined });
    // each call answers as the item says: a store fault, the item's own refusal, or a result
    const lane = access.lane<string, string | SendFieldError>("hold", async (_s, items) => items.map((item) => (
      item === "fault" ? new StoreUnavailableError("timeout", "store timeout") : item === "refused" ? new SendFieldError("msg", "cannot be held") : item)));
    const answers: unknown[] = [];
    const submit = async (item: string): Promise<void> => { answers.push(await access.submit(lane, item).catch((err: unknown) => err)); };
    for (const item of ["fault", "fault", "refused", "refused"]) await submit(item);
    assert.ok(answers[2] instanceof SendFieldError && answers[3] instanceof SendFieldError, "a refused item is answered with its own error, not a store failure");
    assert.equal(access.breaker.isOpen(), false, "two store faults, then refusals: the refusals are not counted as faults");
    await submit("fault");
    assert.equal(access.breaker.isOpen(), true, "the third store fault in a row opens it: the refusals between did not reset the count");
    await store.close();
  });

  it("under a stalled Redis (DEBUG SLEEP 0.5), times each call from when it was sent, then short-circuits until a probe succeeds", async () => {
    const q = await open({ timeoutMs: 50 });
    await q.claim(-1);
    const stalled = admin.debug("SLEEP", "0.5");
    await sleep(20);
    // a stream into the stall: 20 claims every 10 ms for 300 ms
    const results: { submittedAt: number; settledAt: number; kind?: string }[] = [];
    const pending: Promise<void>[] = [];
    for (let wave = 0; wave < 30; wave++) {
      for (let j = 0; j < 20; j++) {
        const submittedAt = performance.now();
        pending.push(q.claim(wave * 20 + j).then(
          () => { results.push({ submittedAt, settledAt: performance.now() }); },
          (err: StoreUnavailableError) => { results.push({ submittedAt, settledAt: performance.now(), kind: err.kind }); },
        ));
      }
      await sleep(10);
    }
    await Promise.all(pending);
    await stalled;
    const timedOut = results.filter((r) => r.kind === "timeout");
    const shortCircuited = results.filter((r) => r.kind === "circuit_open");
    assert.ok(timedOut.length > 0, "calls sent into the stall timed out");
    assert.ok(shortCircuited.length > 0, "then the breaker refused without calling");
    assert.equal(results.filter((r) => r.kind === undefined).length, 0, "nothing was answered by the stalled Redis");
    // no msg waited for the stall to end: at most its own call's timeout, plus one call ahead of it, plus a margin
    const longest = Math.max(...results.map((r) => r.settledAt - r.submittedAt));
    assert.ok(longest < 2 * 50 + 100, `the longest wait was ${Math.round(longest)} ms`);
    // after three timeouts the breaker stops calling: far fewer calls than waves
    assert.ok(q.calls.length - 1 <= 6, `${q.calls.length - 1} calls went into the stall`);
    await sleep(1100); // the cool-down: the next call is the probe
    assert.equal((await q.claim(9999)).allowed, true, "the probe found Redis well and the circuit closed");
    assert.equal((await q.claim(9998)).allowed, true);
    await q.store.close();
  });
});
