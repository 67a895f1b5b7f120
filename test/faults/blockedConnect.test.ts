import assert from "node:assert/strict";
import calculateSlot from "cluster-key-slot";
import { connect, type Socket } from "node:net";
import type { Cluster } from "ioredis";
import type Redis from "ioredis";
import { RedisStore } from "../../src/redis/redisStore";
import { CONNECT_TIMEOUT_MS } from "../../src/redis/connectGuard";
import { REDIS_URL } from "../support/redis";
import { OwnRedis, OwnRedisCluster } from "../support/redisServer";

/** Holds the event loop, as a burst of a million msgs handed to a gate in one tick does. */
function blockLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: nothing of this process runs meanwhile, not even a timer
  }
}

/**
 * Resolves once each of `connections()` has a socket and one at least is
 * still connecting (a cluster's first call may have opened a master's), without
 * letting the event loop read any socket (ioredis makes the socket a tick or
 * two after the attempt begins: only ticks and microtasks run here, never a
 * poll phase, which would read the connect of a loopback server at once).
 */
async function untilConnecting(connections: () => Redis[]): Promise<void> {
  for (let turn = 0; turn < 1000; turn++) {
    const all = connections();
    const sockets = all.map((redis) => redis.stream as Socket | undefined);
    if (all.length > 0 && sockets.every((socket) => socket !== undefined) && sockets.some((socket) => socket?.connecting === true)) return;
    await new Promise<void>((resolve) => process.nextTick(resolve));
  }
  throw new Error("the connections were not being opened");
}

/** three keys in each third of the slots: on every master of a 3-master cluster, whichever way its slots were split evenly */
const KEYS_ACROSS_MASTERS = ((): string[] => {
  const keys: string[] = [];
  const inThird = [0, 0, 0];
  for (let i = 0; keys.length < 9; i++) {
    const key = `blocked-connect-${i}`;
    const third = Math.floor(calculateSlot(key) / 5462);
    if (inThird[third] < 3) {
      inThird[third]++;
      keys.push(key);
    }
  }
  return keys;
})();

/** Every error a client and, for a cluster, its masters' connections emitted. */
function errorsOf(store: RedisStore): string[] {
  const errors: string[] = [];
  const watch = (redis: Redis): void => { redis.on("error", (err: Error) => errors.push(err.message)); };
  if (store.kind === "redis-cluster") (store.client as Cluster).on("+node", watch);
  else watch(store.client as Redis);
  return errors;
}

/**
 * A connection attempt is given up CONNECT_TIMEOUT_MS after it began, but not
 * because this process was too busy to read its connect: ioredis's own timer
 * fires before the loop reads the socket, and so ended a cluster's master
 * connections that a burst's first calls had opened, failing their calls.
 */
describe("connecting while the event loop is blocked", function () {
  this.timeout(60_000);

  it("one Redis: the connection made during a block longer than the connect timeout is kept", async () => {
    const store = new RedisStore({ url: REDIS_URL });
    const errors = errorsOf(store);
    let reconnects = 0;
    (store.client as Redis).on("reconnecting", () => reconnects++);
    try {
      await untilConnecting(() => [store.client as Redis]);
      blockLoop(CONNECT_TIMEOUT_MS + 1000);
      assert.equal(await (store.client as Redis).ping(), "PONG");
      assert.deepEqual(errors, [], "no connect ETIMEDOUT");
      assert.equal(reconnects, 0, "the first connection was kept");
    } finally {
      await store.close();
    }
  });

  it("a 3-master cluster: calls that opened the masters' connections just before the block are answered", async () => {
    const cluster = new OwnRedisCluster();
    await cluster.start();
    const store = new RedisStore({ clusterNodes: cluster.seeds.split(",") });
    const errors = errorsOf(store);
    const dropped: string[] = [];
    (store.client as Cluster).on("-node", (_redis: Redis, key: string) => dropped.push(key));
    try {
      await new Promise<void>((resolve) => (store.client as Cluster).once("ready", resolve));
      // the first call to each master opens its connection: the block starts while they are being opened
      const client = store.client as Cluster;
      const calls = KEYS_ACROSS_MASTERS.map((key) => client.set(key, "1"));
      await untilConnecting(() => client.nodes("master"));
      blockLoop(CONNECT_TIMEOUT_MS + 1000);
      assert.deepEqual(await Promise.all(calls), KEYS_ACROSS_MASTERS.map(() => "OK"));
      assert.deepEqual(errors, [], "no connect ETIMEDOUT");
      assert.deepEqual(dropped, [], "no master's connection ended");
      const calledMasters = new Set(KEYS_ACROSS_MASTERS.map((key) => client.slots[calculateSlot(key)]?.[0]));
      assert.equal(calledMasters.size, 3, "the calls went to all three masters");
      assert.deepEqual(client.nodes("master").map((node) => node.status), ["ready", "ready", "ready"], "each master's connection kept");
    } finally {
      await store.close();
      await cluster.stop();
    }
  });

  it("an attempt that never connects is still given up after the connect timeout", async () => {
    // a server that accepts nothing (stopped) with a listen queue of one, filled: the kernel answers no more SYNs
    const own = new OwnRedis(0, ["--tcp-backlog", "0"]);
    await own.start();
    own.pause();
    const fillers: Socket[] = [];
    const store: { value?: RedisStore } = {};
    try {
      for (let i = 0; i < 3; i++) fillers.push(connect(own.port, "127.0.0.1").on("error", () => undefined));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const began = performance.now();
      store.value = new RedisStore({ url: own.url });
      const gaveUp = await new Promise<Error>((resolve) => (store.value?.client as Redis).once("error", resolve));
      const after = performance.now() - began;
      assert.match(gaveUp.message, /ETIMEDOUT/);
      assert.ok(after >= CONNECT_TIMEOUT_MS - 50 && after < CONNECT_TIMEOUT_MS + 2000, `given up after ${Math.round(after)} ms`);
    } finally {
      for (const socket of fillers) socket.destroy();
      own.resume();
      await store.value?.close();
      await own.stop();
      own.cleanUp();
    }
  });
});
