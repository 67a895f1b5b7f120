import assert from "node:assert/strict";
import type { Pool } from "pg";
import { RulesUnavailableError } from "../../../src/core/rules/errors";
import { createRulesPool } from "../../../src/postgres/pool";
import { PgRuleRepository } from "../../../src/postgres/ruleRepository";
import { RuleCache, RuleCacheStats } from "../../../src/core/rules/ruleCache";
import type { RulesTable } from "../../../src/postgres/tableName";
import { closeMigratedSchema, openMigratedSchema } from "../../support/postgres";
import { sleep } from "../../support/redis";

describe("core/pgRules: RuleCache over a real PostgreSQL", () => {
  let pool: Pool;
  let schema: string;
  let table: RulesTable;
  let repo: PgRuleRepository;
  let warnings: string[];

  before(async () => {
    ({ pool, schema, table } = await openMigratedSchema("cache"));
  });

  beforeEach(async () => {
    await pool.query(`DELETE FROM ${table.sql}`);
    warnings = [];
    repo = new PgRuleRepository({ db: pool, table, warn: (t) => warnings.push(t) });
    await repo.create("acme", { id: "sms-3", scope: "channel", channel: "sms", max_count: 3, window_seconds: 60 });
    await repo.create("acme", { id: "email-2", scope: "channel", channel: "email", max_count: 2, window_seconds: 60 });
    await repo.create("acme", { id: "all-9", scope: "global", max_count: 9, window_seconds: 60 });
    await repo.create("globex", { id: "sms-1", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 });
  });

  after(() => closeMigratedSchema({ pool, schema }));

  function cache(ttlMs = 30_000): RuleCache {
    return new RuleCache({ load: (org, channel) => repo.rulesFor(org, channel), ttlMs, warn: (t) => warnings.push(t) });
  }

  const ids = (rules: readonly { id: string }[]): string[] => rules.map((r) => r.id);

  it("answers a fresh key from memory: no query, and peek sees it", async () => {
    const c = cache();
    assert.equal(c.peek("acme", "sms"), undefined);
    assert.deepEqual(ids(await c.get("acme", "sms")), ["all-9", "sms-3"]);
    assert.equal(repo.loadCount, 1);
    for (let i = 0; i < 1000; i++) await c.get("acme", "sms");
    assert.deepEqual(ids(c.peek("acme", "sms") ?? []), ["all-9", "sms-3"]);
    assert.equal(repo.loadCount, 1);
    assert.equal(c.state(), "ok");
  });

  it("counts hits, misses and invalidations for the metrics: a miss per load waited for, a hit per answer from memory", async () => {
    const stats = new RuleCacheStats();
    const c = new RuleCache({ load: (org, channel) => repo.rulesFor(org, channel), warn: (t) => warnings.push(t), stats });
    assert.equal(c.peek("acme", "sms"), undefined);
    await Promise.all([c.get("acme", "sms"), c.get("acme", "sms")]);
    for (let i = 0; i < 10; i++) await c.get("acme", "sms");
    assert.ok(c.peek("acme", "sms"));
    assert.deepEqual([stats.hits, stats.misses], [11, 2], "two gets raced the first load; ten gets and a peek found it");
    c.invalidate("acme", "sms");
    c.invalidate("acme", "*");
    c.invalidate("acme", "*");
    c.invalidateAll();
    assert.deepEqual(stats.invalidations, { channel: 1, org: 2, all: 1 });
    await c.get("acme", "sms");
    assert.equal(stats.misses, 3);
    assert.equal(repo.loadCount, 2);
  });

  it("makes one query for 50 concurrent misses of one key", async () => {
    const c = cache();
    const answers = await Promise.all(Array.from({ length: 50 }, () => c.get("acme", "sms")));
    assert.equal(repo.loadCount, 1);
    for (const a of answers) assert.deepEqual(ids(a), ["all-9", "sms-3"]);
    await Promise.all([c.get("acme", "email"), c.get("acme", "email"), c.get("globex", "sms")]);
    assert.equal(repo.loadCount, 3, "one per other key");
  });

  it("reloads after the TTL", async () => {
    const c = cache(100);
    await c.get("acme", "sms");
    await pool.query(`UPDATE ${table.sql} SET max_count = 4 WHERE id = 'sms-3'`);
    assert.equal((await c.get("acme", "sms")).find((r) => r.id === "sms-3")?.max_count, 3);
    await sleep(120);
    assert.equal((await c.get("acme", "sms")).find((r) => r.id === "sms-3")?.max_count, 4);
    assert.equal(repo.loadCount, 2);
  });

  it("invalidates one channel at once, leaving the others cached", async () => {
    const c = cache();
    await Promise.all([c.get("acme", "sms"), c.get("acme", "email")]);
    await repo.update("acme", "sms-3", { scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 });
    c.invalidate("acme", "sms");
    assert.equal(c.peek("acme", "sms"), undefined);
    assert.ok(c.peek("acme", "email"));
    assert.equal((await c.get("acme", "sms")).find((r) => r.id === "sms-3")?.max_count, 1);
    assert.equal(repo.loadCount, 3);
  });

  it("invalidates every channel of the org for '*' (a global write), not other orgs", async () => {
    const c = cache();
    await Promise.all([c.get("acme", "sms"), c.get("acme", "email"), c.get("globex", "sms")]);
    await repo.update("acme", "all-9", { scope: "global", max_count: 2, window_seconds: 60 });
    c.invalidate("acme", "*");
    assert.equal(c.peek("acme", "sms"), undefined);
    assert.equal(c.peek("acme", "email"), undefined);
    assert.ok(c.peek("globex", "sms"));
    assert.equal((await c.get("acme", "email")).find((r) => r.id === "all-9")?.max_count, 2);
  });

  it("keeps at most maxKeys keys, dropping the oldest", async () => {
    const c = new RuleCache({ load: (org, channel) => repo.rulesFor(org, channel), maxKeys: 2, warn: (t) => warnings.push(t) });
    await c.get("acme", "sms");
    await c.get("acme", "email");
    await c.get("globex", "sms");
    assert.equal(c.peek("acme", "sms"), undefined);
    assert.ok(c.peek("acme", "email") && c.peek("globex", "sms"));
    await c.get("acme", "sms");
    assert.equal(repo.loadCount, 4);
  });

  it("does not keep as fresh a load that was running when the key was invalidated", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let first = true;
    const c = new RuleCache({
      warn: (t) => warnings.push(t),
      load: async (org, channel) => {
        const rules = await repo.rulesFor(org, channel);
        if (first) {
          first = false;
          await held; // read before the write below, answered after it
        }
        return rules;
      },
    });
    const early = c.get("acme", "sms");
    await sleep(20);
    await repo.remove("acme", "sms-3");
    c.invalidate("acme", "sms");
    const late = c.get("acme", "sms"); // a new load, not the held one
    release();
    assert.deepEqual(ids(await early), ["all-9", "sms-3"]);
    assert.deepEqual(ids(await late), ["all-9"]);
    assert.deepEqual(ids(await c.get("acme", "sms")), ["all-9"]);
  });

  it("rejects a key never loaded while the database is unreachable, retrying only after the backoff", async () => {
    const down = createRulesPool({ url: "postgres://postgres@127.0.0.1:1/test", connectTimeoutMs: 500 });
    const downRepo = new PgRuleRepository({ db: down, table, warn: (t) => warnings.push(t) });
    const c = new RuleCache({ load: (o, ch) => downRepo.rulesFor(o, ch), retryMs: 200, warn: (t) => warnings.push(t) });
    try {
      await assert.rejects(c.get("acme", "sms"), RulesUnavailableError);
      assert.equal(c.state(), "stale");
      await assert.rejects(c.get("acme", "sms"), /could not be loaded and none were loaded before/);
      assert.equal(downRepo.loadCount, 1, "no second attempt within the backoff");
      await sleep(220);
      await assert.rejects(c.get("acme", "sms"), RulesUnavailableError);
      assert.equal(downRepo.loadCount, 2);
      assert.equal(warnings.filter((w) => /could not be loaded/.test(w)).length, 1, "one warning per outage");
    } finally {
      await down.end();
    }
  });
});
