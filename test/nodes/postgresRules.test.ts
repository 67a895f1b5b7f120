import assert from "node:assert/strict";
import type { Pool } from "pg";
import { deployGateFlow, sendInOrder } from "../support/gateFlow";
import { helper } from "../support/nodeRed";
import { DATABASE_URL, OwnPostgres, createSchema, dropSchema, testPool, uniqueSchema } from "../support/postgres";
import { dropPrefix, redisClient, sleep, uniquePrefix } from "../support/redis";

const CAP = { id: "two", scope: "channel", channel: "sms", max_count: 2, window_seconds: 3600 };

describe("rulesSource postgres: caps from PostgreSQL, admin API, live invalidation", function () {
  this.timeout(60_000);
  let pool: Pool;
  let schema: string;
  let keyPrefix: string;
  const redis = redisClient();

  before(async () => {
    pool = testPool();
    helper.settings({ userDir: undefined }); // no memory-store file: what survives a redeploy here came from PostgreSQL
    await helper.startServer();
  });
  after(async () => {
    await helper.stopServer();
    await pool.end();
    await redis.quit();
  });
  beforeEach(async () => {
    schema = uniqueSchema("node");
    keyPrefix = uniquePrefix("pg");
    await createSchema(pool, schema);
  });
  afterEach(async () => {
    await helper.unload();
    await dropSchema(pool, schema);
    await dropPrefix(redis, keyPrefix);
  });

  const pgConfig = (extra: Record<string, unknown> = {}) => ({
    rulesSource: "postgres", pgUrl: DATABASE_URL, pgTable: `${schema}.frequency_caps`, keyPrefix, timeoutMs: 2000, defaultOrg: "acme", ...extra,
  });
  const api = () => helper.request();
  const sends = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ recipient: "r", channel: "sms", messageId: `${prefix}${i}` }));

  /** Until the cap-config has reached PostgreSQL (migrated, block list attached): its caps API answers 200. */
  async function waitForTable(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const { rows } = await pool.query("SELECT to_regclass($1) AS t", [`${schema}.frequency_caps`]);
      if (rows[0].t && (await api().get("/frequency-cap/cfg0/caps")).status === 200) return;
      await sleep(20);
    }
    throw new Error("the cap-config did not reach PostgreSQL");
  }

  it("migrates on start; a cap created through the API gates the next send, deleting it stops gating the very next", async () => {
    const flow = await deployGateFlow({ store: "redis", config: pgConfig(), rules: [] });
    await waitForTable();
    await sendInOrder(flow, sends("before-", 3));
    assert.equal(flow.out.of("allowed").length, 3, "no caps yet");

    const created = await api().post("/frequency-cap/cfg0/caps").send(CAP);
    assert.equal(created.status, 201, created.text);
    assert.equal((created.body as { org: string }).org, "acme");
    await sendInOrder(flow, sends("with-", 3));
    assert.deepEqual(flow.out.of("skipped").map((m) => m.messageId), ["with-2"], "the new cap gated the very next sends");

    const removed = await api().delete("/frequency-cap/cfg0/caps/two");
    assert.equal(removed.status, 200, removed.text);
    await sendInOrder(flow, sends("after-", 1));
    assert.equal(flow.out.of("allowed").at(-1)?.messageId, "after-0", "the deleted cap stopped gating the next send");

    const listed = await api().get("/frequency-cap/cfg0/caps");
    assert.deepEqual((listed.body as { rules: unknown[] }).rules, []);
    assert.equal((await api().delete("/frequency-cap/cfg0/caps/two")).status, 404);
    const withoutId: Record<string, unknown> = { ...CAP };
    delete withoutId.id;
    assert.equal((await api().put("/frequency-cap/cfg0/caps/nope").send(withoutId)).status, 404);
    assert.equal((await api().put("/frequency-cap/cfg0/caps/nope").send(CAP)).status, 400, "a body naming another id");
    assert.equal((await api().get("/frequency-cap/unknown/caps")).status, 404);
  });

  it("answers a bad body with 400 naming every error, and a taken id with 409", async () => {
    await deployGateFlow({ store: "memory", config: pgConfig(), rules: [] });
    await waitForTable();
    const bad = await api().post("/frequency-cap/cfg0/caps").send({ id: "g", scope: "global", channel: "sms", max_count: 0, window_seconds: "day" });
    assert.equal(bad.status, 400);
    const problems = (bad.body as { details: string[] }).details.join("\n");
    assert.match(problems, /global cap must not name a channel/);
    assert.match(problems, /max_count/);
    assert.match(problems, /window_seconds/);
    assert.equal((await api().post("/frequency-cap/cfg0/caps").send(CAP)).status, 201);
    assert.equal((await api().post("/frequency-cap/cfg0/caps").send(CAP)).status, 409);
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".frequency_caps`);
    assert.equal(rows[0].n, 1, "nothing of the refused bodies was written");
  });

  it("shows a change made through one cap-config at once on a second one (two instances, one Redis, one PostgreSQL)", async () => {
    const flow = await deployGateFlow({ store: "redis", instances: 2, config: pgConfig(), rules: [] });
    await waitForTable();
    await sendInOrder(flow, sends("warm-", 1));
    flow.send({ recipient: "warm-other", channel: "sms", messageId: "warm-b" }, 1);
    await flow.out.until(2);
    // instance 1 has (acme, sms) cached with no caps; instance 0 writes a cap
    assert.equal((await api().post("/frequency-cap/cfg0/caps").send({ ...CAP, max_count: 1 })).status, 201);
    await sleep(100);
    flow.send({ recipient: "fresh", channel: "sms", messageId: "b1" }, 1);
    flow.send({ recipient: "fresh", channel: "sms", messageId: "b2" }, 1);
    await flow.out.until(4);
    assert.deepEqual(flow.out.of("skipped").map((m) => m.messageId), ["b2"], "instance 1 enforced the cap written through instance 0");

    assert.equal((await api().put("/frequency-cap/cfg0/caps/two").send({ ...CAP, max_count: 3 })).status, 200);
    await sleep(100);
    flow.send({ recipient: "fresh", channel: "sms", messageId: "b3" }, 1);
    await flow.out.until(5);
    assert.equal(flow.out.of("allowed").at(-1)?.messageId, "b3", "the raised max reached instance 1 too");
  });

  it("refuses API writes to inline rules with 409, and reports usage per cap", async () => {
    const flow = await deployGateFlow({
      store: "redis", config: { keyPrefix, defaultOrg: "acme" },
      rules: [CAP, { id: "mkt", scope: "global", max_count: 5, window_seconds: 600, applies_to_categories: ["marketing"] }],
    });
    const refused = await api().post("/frequency-cap/cfg0/caps").send({ ...CAP, id: "other" });
    assert.equal(refused.status, 409);
    assert.match((refused.body as { error: string }).error, /inline rules/);
    await sendInOrder(flow, [...sends("u", 3), { recipient: "r", channel: "email", category: "marketing", messageId: "m1" }]);
    const usage = await api().get("/frequency-cap/cfg0/usage").query({ recipient: "r", channel: "sms" });
    assert.equal(usage.status, 200, usage.text);
    const caps = (usage.body as { caps: { cap_id: string; count: number; remaining: number; retry_after_seconds: number | null }[] }).caps;
    const two = caps.find((c) => c.cap_id === "two");
    const mkt = caps.find((c) => c.cap_id === "mkt");
    assert.deepEqual([two?.count, two?.remaining], [2, 0]);
    assert.ok((two?.retry_after_seconds ?? 0) > 3500);
    assert.deepEqual([mkt?.count, mkt?.remaining, mkt?.retry_after_seconds], [1, 4, 0]);
    assert.equal((await api().get("/frequency-cap/cfg0/usage").query({ channel: "sms" })).status, 400);
  });

  it("writes the block list through to the suppressions table and reads it back into a fresh store", async () => {
    await deployGateFlow({ store: "memory", config: pgConfig(), rules: [] });
    await waitForTable();
    let posted = 0;
    for (let i = 0; i < 50 && posted !== 201; i++) {
      posted = (await api().post("/frequency-cap/cfg0/suppressions").send([{ recipient: "pg-bob", channel: "sms", reason: "STOP" }, { recipient: "pg-eve" }])).status;
      if (posted !== 201) await sleep(50);
    }
    assert.equal(posted, 201);
    const { rows } = await pool.query(`SELECT org, channel, recipient, reason FROM "${schema}".suppressions ORDER BY recipient`);
    assert.deepEqual(rows, [
      { org: "acme", channel: "sms", recipient: "pg-bob", reason: "STOP" },
      { org: "acme", channel: "*", recipient: "pg-eve", reason: null },
    ]);
    assert.equal((await api().delete("/frequency-cap/cfg0/suppressions").query({ recipient: "pg-eve", channel: "*" })).status, 200);
    assert.equal((await pool.query(`SELECT 1 FROM "${schema}".suppressions`)).rowCount, 1);

    await helper.unload();
    const fresh = await deployGateFlow({
      store: "memory", config: pgConfig(), rules: [],
      gate: { type: "suppression-gate", wires: [["allowed"], ["skipped"]] },
    });
    await sleep(300); // the load from PostgreSQL after the cap-config reached it
    await sendInOrder(fresh, [
      { recipient: "pg-bob", channel: "sms", messageId: "1", payload: "a" },
      { recipient: "pg-eve", channel: "sms", messageId: "2", payload: "b" },
    ]);
    assert.deepEqual(fresh.out.of("skipped").map((m) => (m.admission as { reason: string }).reason), ["opted_out"]);
    assert.deepEqual(fresh.out.of("allowed").map((m) => m.recipient), ["pg-eve"]);
  });

  it("keeps serving the cached rules while PostgreSQL is down, says so, and recovers", async function () {
    if (!OwnPostgres.available()) this.skip();
    const own = new OwnPostgres();
    await own.init();
    await own.start();
    try {
      const flow = await deployGateFlow({
        store: "memory", config: pgConfig({ pgUrl: own.url, pgTable: "frequency_caps" }), rules: [],
      });
      const shown: string[] = [];
      const original = flow.gate.status.bind(flow.gate);
      flow.gate.status = (s) => { if (typeof s !== "string") shown.push(`${s.fill}:${s.text}`); original(s); };
      let created = 0;
      for (let i = 0; i < 50 && created !== 201; i++) {
        created = (await api().post("/frequency-cap/cfg0/caps").send(CAP)).status;
        if (created !== 201) await sleep(50);
      }
      assert.equal(created, 201);
      await sendInOrder(flow, sends("up-", 1));

      await own.stop();
      const rulesSource = (helper.getNode("cfg0") as unknown as { service: { rules: { ruleSource: { cache: { invalidateAll(): void } } } } }).service.rules.ruleSource;
      rulesSource.cache.invalidateAll(); // as after the TTL: the next send must go to the (dead) database
      await sendInOrder(flow, sends("down-", 2));
      assert.deepEqual(flow.out.of("skipped").map((m) => m.messageId), ["down-1"], "the cached cap of 2 still gates");
      await sleep(400);
      assert.ok(shown.some((s) => s.startsWith("yellow:") && s.includes("rules db down")), shown.join("\n"));
      const spy = helper.log() as unknown as { args: [{ level: number; msg: unknown }][] };
      const warned = spy.args.filter(([e]) => e.level === 30).map(([e]) => String(e.msg));
      assert.ok(warned.some((w) => /rules/i.test(w) && /postgres|database/i.test(w)), warned.join("\n"));

      await own.start();
      for (let i = 0; i < 60 && shown.at(-1)?.startsWith("yellow:"); i++) {
        await sendInOrder(flow, [{ recipient: `probe-${i}`, channel: "sms", messageId: `p${i}` }]);
        await sleep(300);
      }
      assert.match(shown.at(-1) ?? "", /^green:/, "recovered by itself");
    } finally {
      await own.stop();
      own.cleanUp();
    }
  });
});
