import assert from "node:assert/strict";
import calculateSlot from "cluster-key-slot";
import Redis, { type Cluster } from "ioredis";
import { StoreUnavailableError } from "../../src/core/errors";
import { StoreAccess } from "../../src/core/store/storeAccess";
import type { ClaimOutcome, ClaimRequest, Settled } from "../../src/core/store/admissionStore";
import { RedisStore } from "../../src/redis/redisStore";
import { sleep, uniquePrefix } from "../support/redis";
import { OwnRedis, OwnRedisCluster } from "../support/redisServer";

/** Keeps Redis busy for ARGV[1] µs of its own clock, then answers 1: a script that is slow but runs. */
const BUSY = `local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - start >= tonumber(ARGV[1])
return 1`;

/**
 * The busy calls' test: each busy call takes a tenth of the timeout, sixteen
 * in a row well over it. A timeout of 200 ms, not 50: the gaps between the
 * answers must stay under it while this box runs other suites, which can
 * keep a server off the CPU for tens of ms (the silent ones keep 50).
 */
const BUSY_TIMEOUT_MS = 200;
const BUSY_US = 20_000;
const BUSY_CALLS = 16;
/**
 * Redis runs every command of one read of a connection (16 KB) before it
 * writes their replies: a busy call as large as a batch of a burst's claims
 * arrives in reads of its own, and Redis answers each before it runs the next
 */
const BATCH_SIZED = "x".repeat(20_000);
const CAP = [{ field: "c", windowMs: 60_000, max: 1 }];

async function ready(store: RedisStore): Promise<void> {
  for (let i = 0; i < 200 && store.state() !== "ready"; i++) await sleep(10);
  assert.equal(store.state(), "ready");
}

/** kind of each failure of `settled` ([] when all were answered) */
function failures(settled: PromiseSettledResult<unknown>[]): string[] {
  return settled.filter((s) => s.status === "rejected").map((s) => ((s).reason as StoreUnavailableError).kind);
}

/**
 * SPEC §9: a store call's timeout says the store is not answering, not that
 * the call waited behind others at a busy server that answers them all: a
 * call fails only when its connection (on a cluster, its master) has
 * answered nothing for timeoutMs since it was sent.
 */
describe("core: a busy store that keeps answering is not timed out; a silent one is", function () {
  this.timeout(60_000);

  describe("one Redis", () => {
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

    it("answers 16 calls in flight that Redis takes 20 ms each to run under a 200 ms timeout: the last, 320 ms after it was sent, is no timeout", async () => {
      const store = new RedisStore({ url: own.url });
      await ready(store);
      // sixteen batches at once, each one busy script: answered one every 20 ms, in order, on the one connection
      const access = new StoreAccess(store, { failMode: "open", timeoutMs: BUSY_TIMEOUT_MS, maxQueued: 1000, maxInFlight: BUSY_CALLS, maxBatch: 2, warn: () => undefined });
      const lane = access.lane<number, number>("busy", async (s, items): Promise<Settled<number>[]> => {
        await (s as RedisStore).client.eval(BUSY, 0, BUSY_US, BATCH_SIZED);
        return items.slice();
      });
      const started = performance.now();
      // the first alone (nothing in flight), then batches of 2
      const settled = await Promise.allSettled(Array.from({ length: 1 + 2 * (BUSY_CALLS - 1) }, (_, i) => access.submit(lane, i)));
      const took = performance.now() - started;
      assert.deepEqual(failures(settled), [], `answered in ${Math.round(took)} ms`);
      assert.ok(took >= 1.5 * BUSY_TIMEOUT_MS, `the last call waited ${Math.round(took)} ms behind the others: past the timeout`);
      assert.equal(access.breaker.state(), "closed");
      await store.close();
    });

    it("still times out a call to a Redis that answers nothing (DEBUG SLEEP) within the timeout and a turn of the loop", async () => {
      const store = new RedisStore({ url: own.url });
      await ready(store);
      const access = new StoreAccess(store, { failMode: "open", timeoutMs: 50, maxQueued: 1000, warn: () => undefined });
      const lane = access.lane<ClaimRequest, ClaimOutcome>("claim", (s, items) => s.claim(items));
      const prefix = uniquePrefix("silent");
      const stalled = admin.debug("SLEEP", "0.5");
      await sleep(20);
      const started = performance.now();
      const settled = await Promise.allSettled([access.submit(lane, { key: `${prefix}:{o|r}:c`, member: "m", token: 1, counters: CAP })]);
      const took = performance.now() - started;
      await stalled;
      assert.deepEqual(failures(settled), ["timeout"]);
      assert.ok(took < 150, `timed out after ${Math.round(took)} ms`);
      await store.close();
    });
  });

  describe("a 3-master Redis Cluster", () => {
    const cluster = new OwnRedisCluster();
    let owners: Map<number, number>;
    before(async function () {
      this.timeout(30_000);
      await cluster.start();
      const probe = new Redis({ port: cluster.nodes[0]?.port, host: "127.0.0.1" });
      owners = new Map();
      for (const [from, to, [, port]] of await probe.cluster("SLOTS")) {
        for (let slot = from; slot <= to; slot++) owners.set(slot, port);
      }
      probe.disconnect();
    });
    after(() => cluster.stop());

    /** `count` claim keys whose slots the master on `port` owns (or, with `not`, any other master) */
    function keysOn(prefix: string, port: number, count: number, not = false): string[] {
      const keys: string[] = [];
      for (let i = 0; keys.length < count; i++) {
        const key = `${prefix}:{o|r${i}}:c`;
        if ((owners.get(calculateSlot(key)) === port) !== not) keys.push(key);
      }
      return keys;
    }

    async function open(timeoutMs = 50): Promise<{ store: RedisStore; access: StoreAccess; claim: (key: string) => Promise<ClaimOutcome> }> {
      // as a cap-config makes it: each master's share of a batch has its own deadline, 0.9 × timeoutMs
      const store = new RedisStore({ clusterNodes: cluster.seeds.split(","), slotDeadlineMs: Math.floor(timeoutMs * 0.9) });
      await ready(store);
      const access = new StoreAccess(store, { failMode: "open", timeoutMs, maxQueued: 10_000, warn: () => undefined });
      const lane = access.lane<ClaimRequest, ClaimOutcome>("claim", (s, items) => s.claim(items));
      let n = 0;
      return { store, access, claim: (key) => access.submit(lane, { key, member: `m${n++}`, token: 1, counters: CAP }) };
    }

    it("answers claims on a master busy with 16 earlier calls of the same connection (320 ms of scripts, timeout 200 ms), beside the other masters' answers", async () => {
      const { store, claim } = await open(BUSY_TIMEOUT_MS);
      const port = cluster.nodes[0]?.port;
      const prefix = uniquePrefix("busy-master");
      const onBusy = keysOn(prefix, port, 20);
      // warm: every master's connection open
      await Promise.all([...onBusy, ...keysOn(prefix, port, 20, true)].map((k) => claim(k)));
      const client = store.client as Cluster;
      const busy = Array.from({ length: BUSY_CALLS }, () => client.eval(BUSY, 1, onBusy[0], BUSY_US, BATCH_SIZED));
      const started = performance.now();
      const settled = await Promise.allSettled([...keysOn(`${prefix}-b`, port, 20), ...keysOn(`${prefix}-b`, port, 20, true)].map((k) => claim(k)));
      const took = performance.now() - started;
      await Promise.all(busy);
      assert.deepEqual(failures(settled), [], `answered in ${Math.round(took)} ms`);
      assert.ok(took >= 1.5 * BUSY_TIMEOUT_MS, `the busy master's claims waited ${Math.round(took)} ms: past the slot's deadline`);
      await store.close();
    });

    it("answers claims sent as the masters' connections open (their first calls) while a burst's hand-over blocks the loop 1.5 s", async () => {
      const { store, claim } = await open();
      const port = cluster.nodes[0]?.port;
      const prefix = uniquePrefix("opening");
      // the cluster is ready; ioredis opens a master's own connection at the first call to it
      const opening = (store.client as Cluster).nodes("master").filter((n) => n.status !== "ready").length;
      const pending = [...keysOn(prefix, port, 20), ...keysOn(prefix, port, 40, true)].map((k) => claim(k));
      const until = performance.now() + 1500;
      while (performance.now() < until) { /* a split node handing over 100,000 msgs */ }
      const settled = await Promise.allSettled(pending);
      assert.deepEqual(failures(settled), [], `${opening} masters' connections were being opened`);
      assert.ok(opening > 0, "some master's connection opened under the burst");
      await store.close();
    });

    it("times out a hung master's claims (SIGSTOP) within the timeout while the other masters keep answering, and answers theirs", async () => {
      const { store, access, claim } = await open();
      const [hung] = cluster.nodes;
      assert.ok(hung);
      const prefix = uniquePrefix("hung-master");
      const onHung = keysOn(prefix, hung.port, 10);
      const elsewhere = keysOn(prefix, hung.port, 10, true);
      await Promise.all([...onHung, ...elsewhere].map((k) => claim(k)));
      hung.pause();
      try {
        // the healthy masters answer a steady stream meanwhile: their answers must not keep the hung master's calls alive
        let streaming = true;
        const stream = (async () => {
          for (let i = 0; streaming; i++) {
            await Promise.allSettled(keysOn(`${prefix}-s${i}`, hung.port, 4, true).map((k) => claim(k)));
            await sleep(5);
          }
        })();
        await sleep(20);
        const timed = async (keys: string[]) => {
          const started = performance.now();
          const settled = await Promise.allSettled(keys.map((k) => claim(k)));
          return { kinds: settled.map((s) => (s.status === "fulfilled" ? "answered" : ((s).reason as StoreUnavailableError).kind)), ms: performance.now() - started };
        };
        // a batch of the hung master's recipients alone, then one mixing them with the others'
        const alone = await timed(keysOn(`${prefix}-a`, hung.port, 3));
        const mixed = await timed([...keysOn(`${prefix}-m`, hung.port, 3), ...keysOn(`${prefix}-m`, hung.port, 3, true)]);
        // a call not split by slot (as the defer queue's, in one slot), timed by the send queue alone
        const direct = access.lane<string, number>("direct", async (s, keys) => {
          await (s as RedisStore).client.eval("return 1", 1, keys[0]);
          return keys.map(() => 1);
        });
        const directStarted = performance.now();
        const directKind = await access.submit(direct, keysOn(`${prefix}-d`, hung.port, 1)[0]).then(() => "answered", (err: StoreUnavailableError) => err.kind);
        const directMs = performance.now() - directStarted;
        streaming = false;
        await stream;
        assert.deepEqual(alone.kinds, ["timeout", "timeout", "timeout"]);
        assert.ok(alone.ms < 200, `the hung master's batch failed after ${Math.round(alone.ms)} ms`);
        assert.deepEqual(mixed.kinds, ["timeout", "timeout", "timeout", "answered", "answered", "answered"]);
        assert.ok(mixed.ms < 200, `the mixed batch took ${Math.round(mixed.ms)} ms`);
        assert.equal(directKind, "timeout");
        assert.ok(directMs < 200, `the call outside the batches failed after ${Math.round(directMs)} ms: the other masters' answers kept it waiting`);
        assert.equal(access.breaker.opens, 0, "a call the other masters answered is no fault");
      } finally {
        hung.resume();
      }
      await store.close();
    });
  });
});
