import Redis from "ioredis";
import assert from "node:assert/strict";
import { REDIS_URL } from "./redis";
import { OwnRedisCluster } from "./redisServer";

/** The stores a gate suite runs on: the embedded one, one Redis, a Redis Cluster of three masters. */
export type StoreKind = "memory" | "redis" | "redis-cluster";
export const STORE_KINDS: readonly StoreKind[] = ["memory", "redis", "redis-cluster"];

/**
 * The store one parameterized suite runs on. Call `hooks()` inside its
 * describe: for "redis-cluster" that starts a 3-master cluster of the suite's
 * own before the tests and stops it (by pid) after them. `drop(prefix)` removes
 * a test's keys from every master and notes which masters held some, and
 * `masterCoverage()` says how many of them the suite's keys reached, so a
 * suite can prove its recipients were spread over every master.
 */
export class SuiteStore {
  readonly cluster: OwnRedisCluster | undefined;
  private readonly mastersUsed = new Set<number>();

  /** spread: false for a suite whose keys sit in one slot by design (one cap-config's defer queue) */
  constructor(readonly kind: StoreKind, private readonly options: { spread?: boolean } = {}) {
    this.cluster = kind === "redis-cluster" ? new OwnRedisCluster() : undefined;
  }

  hooks(): void {
    const cluster = this.cluster;
    if (!cluster) return;
    const store = this;
    before(async function () {
      this.timeout(30_000);
      await cluster.start();
    });
    after(() => cluster.stop());
    // the suite's recipients and queues must have reached every master, or the suite proved less than it says
    after(function checkCoverage() {
      // under --grep only some tests ran: their keys need not reach every master
      if (store.options.spread === false || this.test?.parent?.tests.some((t) => t.state === undefined)) return;
      const { used, of } = store.masterCoverage();
      assert.equal(used, of, `the suite's keys reached ${used} of ${of} masters`);
    });
  }

  /** cap-config fields that put it on this store */
  config(): Record<string, unknown> {
    // a cluster connection (slots map) takes longer to open than the 50 ms default allows a fresh deploy
    if (this.kind === "redis-cluster") return { store: "redis-cluster", redisNodes: this.cluster?.seeds, timeoutMs: 2000 };
    return { store: this.kind, redisUrl: REDIS_URL };
  }

  /** One client per master (one for plain Redis, none for memory), connected now; the caller quits them. */
  masters(): { port: number; client: Redis }[] {
    if (this.kind === "memory") return [];
    if (this.kind === "redis") return [{ port: new URL(REDIS_URL).port === "" ? 6379 : Number(new URL(REDIS_URL).port), client: new Redis(REDIS_URL) }];
    return (this.cluster?.nodes ?? []).map((n) => ({ port: n.port, client: new Redis({ host: "127.0.0.1", port: n.port }) }));
  }

  /** Deletes every key under `prefix` on every master, noting first which masters held some. */
  async drop(prefix: string): Promise<void> {
    for (const { port, client } of this.masters()) {
      let cursor = "0";
      do {
        const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
        cursor = next;
        if (keys.length > 0) this.mastersUsed.add(port);
        // one DEL per key: a cluster node refuses a multi-key DEL across slots (CROSSSLOT)
        const pipeline = client.pipeline();
        for (const key of keys) pipeline.del(key);
        await pipeline.exec();
      } while (cursor !== "0");
      await client.quit();
    }
  }

  /** How many masters held keys of the suite's tests, of how many (noted by `drop`). */
  masterCoverage(): { used: number; of: number } {
    return { used: this.mastersUsed.size, of: this.kind === "redis-cluster" ? (this.cluster?.nodes.length ?? 0) : this.kind === "redis" ? 1 : 0 };
  }
}
