import assert from "node:assert/strict";
import type { Pool } from "pg";
import { deployGateFlow, sendInOrder } from "../support/gateFlow";
import { helper } from "../support/nodeRed";
import { freePort } from "../support/ports";
import { clearOfPeriodEnd } from "../support/calendarClock";
import { DATABASE_URL, createSchema, dropSchema, testPool, uniqueSchema } from "../support/postgres";
import { dropPrefix, redisClient, sleep, uniquePrefix } from "../support/redis";

const CAP = { id: "two", scope: "channel", channel: "sms", max_count: 2, window_seconds: 3600 };

describe("admin API on a cap-config with PostgreSQL", function () {
  this.timeout(60_000);
  let pool: Pool;
  let schema: string;
  let keyPrefix: string;
  const redis = redisClient();

  before(async () => {
    pool = testPool();
    helper.settings({ userDir: undefined });
    await helper.startServer();
  });
  after(async () => {
    await helper.stopServer();
    await pool.end();
    await redis.quit();
  });
  beforeEach(async () => {
    schema = uniqueSchema("api");
    keyPrefix = uniquePrefix("api");
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

  /** Until the block list loaded from PostgreSQL reached the store (it loads in the background). */
  async function untilSkipped(flow: Awaited<ReturnType<typeof deployGateFlow>>, recipient: string): Promise<{ reason?: string }> {
    for (let i = 0; i < 100; i++) {
      await sendInOrder(flow, [{ recipient, channel: "sms", messageId: `probe-${recipient}-${i}`, payload: `p${i}` }]);
      const last = flow.out.of("skipped").at(-1);
      if (last?.recipient === recipient) return (last.admission as { suppression: { reason?: string } }).suppression;
      await sleep(50);
    }
    throw new Error(`${recipient} was never skipped`);
  }

  for (const store of ["memory", "redis"] as const) {
    it(`merges repeated rows of a bulk import (the last row wins) and says how many (${store} store)`, async () => {
      const flow = await deployGateFlow({
        store, config: pgConfig(), rules: [], gate: { type: "suppression-gate", wires: [["allowed"], ["skipped"]] },
      });
      const rows = [
        { recipient: "rep-a", channel: "sms", reason: "first" },
        { recipient: "rep-b" },
        { recipient: "rep-a", channel: "sms", reason: "last" },
        { recipient: "rep-a", reason: "every channel" },
        { recipient: "rep-b", org: "other" },
      ];
      const res = await api().post("/frequency-cap/cfg0/suppressions").send(rows);
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(res.body, { suppressed: 4, repeats_merged: 1 });
      const { rows: stored } = await pool.query(`SELECT org, channel, recipient, reason FROM "${schema}".suppressions ORDER BY org, recipient, channel`);
      assert.deepEqual(stored, [
        { org: "acme", channel: "*", recipient: "rep-a", reason: "every channel" },
        { org: "acme", channel: "sms", recipient: "rep-a", reason: "last" },
        { org: "acme", channel: "*", recipient: "rep-b", reason: null },
        { org: "other", channel: "*", recipient: "rep-b", reason: null },
      ]);
      await sendInOrder(flow, [{ recipient: "rep-a", channel: "sms", messageId: "a1", payload: "x" }]);
      assert.equal((flow.out.of("skipped").at(-1)?.admission as { suppression: { reason: string } }).suppression.reason, "last");

      // CSV, and a burst of 10,000 rows of which 2,000 repeat
      const csv = "recipient,channel,reason\ncsv-1,sms,one\ncsv-1,sms,two\ncsv-2,,x\n";
      const fromCsv = await api().post("/frequency-cap/cfg0/suppressions").set("content-type", "text/csv").send(csv);
      assert.equal(fromCsv.status, 201, fromCsv.text);
      assert.deepEqual(fromCsv.body, { suppressed: 2, repeats_merged: 1 });
      const bulk = Array.from({ length: 10_000 }, (_, i) => ({ recipient: `bulk-${i % 8000}`, reason: `r${i}` }));
      const big = await api().post("/frequency-cap/cfg0/suppressions").send(bulk);
      assert.equal(big.status, 201, big.text);
      assert.deepEqual(big.body, { suppressed: 8000, repeats_merged: 2000 });
      const { rows: [count] } = await pool.query(`SELECT count(*)::int AS n, max(reason) FILTER (WHERE recipient = 'bulk-7') AS r7 FROM "${schema}".suppressions WHERE recipient LIKE 'bulk-%'`);
      assert.deepEqual(count, { n: 8000, r7: "r8007" });

      const removed = await api().delete("/frequency-cap/cfg0/suppressions").send([{ recipient: "rep-a", channel: "sms" }, { recipient: "rep-a", channel: "sms" }]);
      assert.equal(removed.status, 200, removed.text);
      assert.deepEqual(removed.body, { unsuppressed: 1, repeats_merged: 1 });
    });
  }

  it("answers admin calls made right after a deploy once PostgreSQL is reached, instead of 503", async () => {
    const flow = await deployGateFlow({
      store: "redis", config: pgConfig(), rules: [], gate: { type: "suppression-gate", wires: [["allowed"], ["skipped"]] },
    });
    // no wait: these race the cap-config's first connection and migration
    const [listed, created, suppressed] = await Promise.all([
      api().get("/frequency-cap/cfg0/caps"),
      api().post("/frequency-cap/cfg0/caps").send(CAP),
      api().post("/frequency-cap/cfg0/suppressions").send({ recipient: "early", channel: "sms", reason: "STOP" }),
    ]);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(created.status, 201, created.text);
    assert.equal(suppressed.status, 201, suppressed.text);
    assert.equal((await untilSkipped(flow, "early")).reason, "STOP");
  });

  it("GET …/totals gathers an org's total caps from every channel's rows and the global ones, each once", async () => {
    // all-total is a calendar day (UTC): the two sends and the read of its count in one day, not across a UTC midnight
    await clearOfPeriodEnd("calendar_day", "UTC");
    const flow = await deployGateFlow({ store: "redis", config: pgConfig(), rules: [] });
    const caps = [
      CAP,
      { id: "sms-total", scope: "channel", channel: "sms", counts: "total", max_count: 10, window_seconds: 3600 },
      { id: "push-total", scope: "channel", channel: "push", counts: "total", max_count: 20, window_seconds: 1, window_type: "lifetime" },
      { id: "all-total", scope: "global", counts: "total", max_count: 30, window_seconds: 86400, window_type: "calendar_day" },
    ];
    for (const cap of caps) {
      const created = await api().post("/frequency-cap/cfg0/caps").send(cap);
      assert.equal(created.status, 201, created.text);
    }
    await sendInOrder(flow, [{ recipient: "r1", channel: "sms", messageId: "s1" }, { recipient: "r2", channel: "sms", messageId: "s2" }]);
    const res = await api().get("/frequency-cap/cfg0/totals");
    assert.equal(res.status, 200, res.text);
    const body = res.body as { org: string; caps: { cap_id: string; count: number; remaining: number; leased: number; window_type: string }[] };
    assert.equal(body.org, "acme");
    const byId = new Map(body.caps.map((c) => [c.cap_id, c]));
    assert.deepEqual([...byId.keys()].sort(), ["all-total", "push-total", "sms-total"]);
    assert.equal(body.caps.length, 3, "a global cap is listed once, not once per channel");
    assert.deepEqual([byId.get("sms-total")?.count, byId.get("all-total")?.count, byId.get("push-total")?.count], [2, 2, 0]);
    assert.equal((byId.get("sms-total")?.remaining ?? 0) + (byId.get("sms-total")?.leased ?? 0), 8);
    assert.equal(byId.get("push-total")?.window_type, "lifetime");
  });

  it("waits a bounded time: answers 503 within about 5 s when PostgreSQL cannot be reached", async () => {
    const dead = `postgres://postgres@127.0.0.1:${await freePort()}/postgres`;
    await deployGateFlow({ store: "memory", config: pgConfig({ pgUrl: dead }), rules: [] });
    const started = Date.now();
    const [listed, suppressed] = await Promise.all([
      api().get("/frequency-cap/cfg0/caps"),
      api().post("/frequency-cap/cfg0/suppressions").send({ recipient: "x" }),
    ]);
    const waited = Date.now() - started;
    assert.equal(listed.status, 503, listed.text);
    assert.equal(suppressed.status, 503, suppressed.text);
    assert.match((listed.body as { error: string }).error, /not reachable/);
    assert.ok(waited >= 4500 && waited < 8000, `waited ${waited} ms`);
  });
});
