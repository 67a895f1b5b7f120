import assert from "node:assert/strict";
import { RedisStore } from "../../src/redis/redisStore";
import type { SuppressionWrite } from "../../src/core/store/admissionStore";
import { blockListIndexField, blockListIndexKey, blockListKey } from "../../src/core/suppression/suppressionKeys";
import { dropPrefix, REDIS_URL, redisClient, sleep, uniquePrefix } from "../support/redis";
import { isDatabaseUnreachable } from "../../src/core/rules/errors";

/**
 * On a Redis Cluster the block list (what sends are checked against) and the
 * org's index (what the admin API lists) sit on different masters, so nothing
 * orders their writes unless the store does. Here the block-list writes are
 * made slow on purpose: a listing must still never show an entry a send would
 * not find, nor hide one a send still finds.
 */
describe("RedisStore suppression writes: enforced before listed, unlisted before unenforced", function () {
  const prefix = uniquePrefix("suporder");
  const admin = redisClient();
  let store: RedisStore;
  const events: string[] = [];

  before(() => {
    store = new RedisStore({ url: REDIS_URL });
    const client = store.client as unknown as Record<"hset" | "hdel", (key: string, ...rest: string[]) => Promise<number>>;
    for (const command of ["hset", "hdel"] as const) {
      const original = client[command].bind(store.client);
      client[command] = async (key: string, ...rest: string[]) => {
        const part = key.endsWith(":sidx") ? "index" : "list";
        events.push(`${command} ${part} sent`);
        if (part === "list") await sleep(30); // a slow master
        const result = await original(key, ...rest);
        events.push(`${command} ${part} done`);
        return result;
      };
    }
  });
  after(async () => {
    await store.close();
    await dropPrefix(admin, prefix);
    await admin.quit();
  });
  beforeEach(() => { events.length = 0; });

  const write = (entry?: string): SuppressionWrite => ({
    listKey: blockListKey(prefix, "acme", "bob"), field: "sms",
    indexKey: blockListIndexKey(prefix, "acme"), indexField: blockListIndexField("sms", "bob"),
    ...(entry !== undefined ? { entry } : {}),
  });

  it("writes the block list, and only once it landed, the index", async () => {
    await store.writeSuppressions([write('{"recipient":"bob"}')]);
    assert.deepEqual(events, ["hset list sent", "hset list done", "hset index sent", "hset index done"]);
  });

  it("removes from the index first, then from the block list", async () => {
    await store.writeSuppressions([write()]);
    assert.deepEqual(events, ["hdel index sent", "hdel index done", "hdel list sent", "hdel list done"]);
  });
});

describe("isDatabaseUnreachable: which PostgreSQL errors mean the write did not take because the database was away", () => {
  const err = (code: string | undefined, message: string) => Object.assign(new Error(message), code === undefined ? {} : { code });
  it("says yes to refused and reset sockets, shutdowns, connection-class SQLSTATEs and pg's own terminations", () => {
    for (const e of [err("ECONNREFUSED", "connect ECONNREFUSED"), err("ECONNRESET", "read ECONNRESET"), err("57P01", "terminating connection due to administrator command"),
      err("08006", "connection failure"), err("57P03", "the database system is starting up"), err(undefined, "Connection terminated unexpectedly"),
      err(undefined, "timeout exceeded when trying to connect")]) {
      assert.equal(isDatabaseUnreachable(e), true, e.message);
    }
  });
  it("says no to a statement's own errors and to non-errors", () => {
    for (const e of [err("23505", "duplicate key"), err("42601", "syntax error"), err("22P02", "invalid input"), new Error("something else")]) {
      assert.equal(isDatabaseUnreachable(e), false, e.message);
    }
    assert.equal(isDatabaseUnreachable(undefined), false);
    assert.equal(isDatabaseUnreachable("ECONNREFUSED"), false);
  });
});
