import assert from "node:assert/strict";
import Redis from "ioredis";
import type { Pool } from "pg";
import { PgRuleSource } from "../../../src/postgres/ruleSource";
import { RedisInvalidationBus } from "../../../src/redis/invalidationBus";
import { createSchema, DATABASE_URL, dropSchema, testPool, uniqueSchema } from "../../support/postgres";
import { REDIS_URL, sleep, uniquePrefix } from "../../support/redis";

/** Polls until `check` holds (an invalidation crosses Redis in well under this). */
async function eventually(check: () => boolean, what: string, ms = 1000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) assert.fail(`not within ${ms} ms: ${what}`);
    await sleep(5);
  }
}

describe("core/pgRules: PgRuleSource on two instances (real PostgreSQL and Redis)", () => {
  let admin: Pool;
  let schema: string;
  let prefix: string;
  let connections: Redis[];
  let sources: PgRuleSource[];
  let warnings: string[];

  function connect(): Redis {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    connections.push(client);
    return client;
  }

  async function instance(): Promise<PgRuleSource> {
    const bus = new RedisInvalidationBus({ connect, keyPrefix: prefix });
    await bus.subscribed;
    const source = await PgRuleSource.open({ url: DATABASE_URL, table: `${schema}.frequency_caps`, bus, warn: (t) => warnings.push(t) });
    sources.push(source);
    return source;
  }

  before(async () => {
    admin = testPool();
    schema = uniqueSchema("src");
    await createSchema(admin, schema);
  });

  beforeEach(() => {
    prefix = uniquePrefix("rules");
    connections = [];
    sources = [];
    warnings = [];
  });

  afterEach(async () => {
    await Promise.all(sources.map((s) => s.close()));
    await admin.query(`DELETE FROM "${schema}".frequency_caps`).catch(() => undefined);
  });

  after(async () => {
    await dropSchema(admin, schema);
    await admin.end();
  });

  it("migrates on open: a second instance on the same table just starts", async () => {
    const a = await instance();
    const b = await instance();
    await a.create("acme", { id: "c", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 });
    assert.deepEqual((await b.rulesFor("acme", "sms")).map((r) => r.id), ["c"]);
  });

  it("a write on one instance gates the next send on the other at once", async () => {
    const a = await instance();
    const b = await instance();
    await a.create("acme", { id: "sms-3", scope: "channel", channel: "sms", max_count: 3, window_seconds: 60 });
    assert.equal((await b.rulesFor("acme", "sms"))[0]?.max_count, 3);
    // the create's own message may reach b just after that load: b then reloads once more
    await sleep(50);
    assert.equal((await b.rulesFor("acme", "sms"))[0]?.max_count, 3);
    assert.ok(b.peek("acme", "sms"), "b has it cached (TTL 30 s)");

    await a.update("acme", "sms-3", { scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 });
    assert.equal(a.peek("acme", "sms"), undefined, "the writing instance forgets at once");
    await eventually(() => b.peek("acme", "sms") === undefined, "b forgets (acme, sms)");
    assert.equal((await b.rulesFor("acme", "sms"))[0]?.max_count, 1);

    await a.remove("acme", "sms-3");
    await eventually(() => b.peek("acme", "sms") === undefined, "b forgets after the delete");
    assert.deepEqual(await b.rulesFor("acme", "sms"), []);
  });

  it("a global write invalidates every channel of the org on every instance, and no other org", async () => {
    const a = await instance();
    const b = await instance();
    await a.create("acme", { id: "sms-1", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 });
    await Promise.all([b.rulesFor("acme", "sms"), b.rulesFor("acme", "email"), b.rulesFor("acme", "push"), b.rulesFor("globex", "sms")]);
    await a.create("acme", { id: "all", scope: "global", max_count: 5, window_seconds: 60 });
    await eventually(() => ["sms", "email", "push"].every((ch) => b.peek("acme", ch) === undefined), "b forgets every acme channel");
    assert.ok(b.peek("globex", "sms"), "another org stays cached");
    assert.deepEqual((await b.rulesFor("acme", "email")).map((r) => r.id), ["all"]);
    assert.deepEqual((await b.rulesFor("acme", "sms")).map((r) => r.id), ["all", "sms-1"]);
  });

  it("moving a rule to another channel invalidates both", async () => {
    const a = await instance();
    const b = await instance();
    await a.create("acme", { id: "m", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 });
    await Promise.all([b.rulesFor("acme", "sms"), b.rulesFor("acme", "email")]);
    await a.update("acme", "m", { scope: "channel", channel: "email", max_count: 1, window_seconds: 60 });
    await eventually(() => b.peek("acme", "sms") === undefined && b.peek("acme", "email") === undefined, "both channels forgotten");
    assert.deepEqual(await b.rulesFor("acme", "sms"), []);
    assert.deepEqual((await b.rulesFor("acme", "email")).map((r) => r.id), ["m"]);
  });

  it("a Redis reconnect of the subscriber forgets everything (changes may have been missed)", async () => {
    const a = await instance();
    await a.create("acme", { id: "m", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 });
    await a.rulesFor("acme", "sms");
    const subscriber = connections[1];
    subscriber.disconnect(true);
    await eventually(() => a.peek("acme", "sms") === undefined, "forgotten after the resubscribe", 3000);
  });

  it("close() ends the pool and both Redis connections, and resolves only then", async () => {
    const a = await instance();
    await a.rulesFor("acme", "sms");
    await a.close();
    sources = [];
    assert.equal(a.pool.totalCount, 0);
    assert.ok(a.pool.ended);
    assert.deepEqual(connections.map((c) => c.status), ["end", "end"]);
    await a.close(); // twice is harmless
  });

  it("refuses a bad pgTable before connecting, and a database it cannot reach, leaving nothing open", async () => {
    const bus = new RedisInvalidationBus({ connect, keyPrefix: prefix });
    await assert.rejects(PgRuleSource.open({ url: DATABASE_URL, table: "x; drop", bus, warn: () => undefined }), /pgTable/);
    const bus2 = new RedisInvalidationBus({ connect, keyPrefix: prefix });
    await assert.rejects(PgRuleSource.open({ url: "postgres://postgres@127.0.0.1:1/test", bus: bus2, warn: () => undefined }), /ECONNREFUSED/);
    await eventually(() => connections.every((c) => c.status === "end"), "both buses closed");
  });
});
