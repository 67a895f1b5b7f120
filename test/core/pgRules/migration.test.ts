import assert from "node:assert/strict";
import type { Pool } from "pg";
import { migrateRulesTable } from "../../../src/postgres/rulesTable";
import { rulesTable, rulesTableProblem } from "../../../src/postgres/tableName";
import { createSchema, dropSchema, testPool, uniqueSchema } from "../../support/postgres";

async function columns(pool: Pool, schema: string, table: string): Promise<Map<string, { type: string; nullable: string; dflt: string | null }>> {
  const { rows } = await pool.query<{ column_name: string; data_type: string; is_nullable: string; column_default: string | null }>(
    `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = $2`, [schema, table]);
  return new Map(rows.map((r) => [r.column_name, { type: r.data_type, nullable: r.is_nullable, dflt: r.column_default }]));
}

describe("core/pgRules: table name", () => {
  it("accepts table and schema.table, quoted, and refuses anything else", () => {
    assert.equal(rulesTable("frequency_caps").sql, `"frequency_caps"`);
    assert.equal(rulesTable("ops.frequency_caps").sql, `"ops"."frequency_caps"`);
    for (const bad of ["", "Caps", "caps; drop table x", `a"b`, "a.b.c", "1caps", "x".repeat(64), 42]) {
      assert.match(String(rulesTableProblem(bad)), /^pgTable: /, String(bad));
      assert.throws(() => rulesTable(bad));
    }
  });

  it("keeps the index name within 63 characters and distinct for long table names", () => {
    const a = rulesTable(`${"a".repeat(60)}_x`).indexSql;
    const b = rulesTable(`${"a".repeat(60)}_y`).indexSql;
    assert.ok(a.length - 2 <= 63 && b.length - 2 <= 63);
    assert.notEqual(a, b);
  });
});

describe("core/pgRules: migration (real PostgreSQL)", () => {
  let pool: Pool;
  let schema: string;

  before(async () => {
    pool = testPool();
    schema = uniqueSchema("mig");
    await createSchema(pool, schema);
  });

  after(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  it("creates the table, its columns and the partial (org, channel) index on an empty database", async () => {
    const t = rulesTable(`${schema}.frequency_caps`);
    await migrateRulesTable(pool, t);
    const cols = await columns(pool, schema, "frequency_caps");
    assert.deepEqual([...cols.keys()].sort(), [
      "applies_to_categories", "channel", "counts", "created_at", "disposition", "enabled", "enforcement", "id", "match", "max_count", "name",
      "org", "per", "scope", "updated_at", "window_seconds", "window_type",
    ]);
    assert.match(String(cols.get("enforcement")?.dflt), /enforce/);
    assert.match(String(cols.get("counts")?.dflt), /per_recipient/);
    assert.equal(cols.get("counts")?.nullable, "NO");
    assert.equal(cols.get("enforcement")?.nullable, "NO");
    assert.equal(cols.get("applies_to_categories")?.type, "ARRAY");
    assert.equal(cols.get("match")?.type, "jsonb");
    assert.equal(cols.get("created_at")?.type, "timestamp with time zone");
    assert.equal(cols.get("org")?.nullable, "NO");
    assert.match(String(cols.get("window_type")?.dflt), /rolling/);
    const { rows: idx } = await pool.query<{ indexdef: string }>(
      "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'frequency_caps'", [schema]);
    const defs = idx.map((r) => r.indexdef).join("\n");
    assert.match(defs, /UNIQUE INDEX .* \(org, id\)/);
    assert.match(defs, /INDEX .* \(org, channel\) WHERE enabled/);
    await assert.rejects(pool.query(`INSERT INTO "${schema}".frequency_caps (id, org, scope, channel, max_count, window_seconds)
      VALUES ('x', 'acme', 'sideways', 'sms', 1, 1)`), /check constraint/);
  });

  it("re-runs on a migrated table without touching its rows", async () => {
    const t = rulesTable(`${schema}.frequency_caps`);
    await pool.query(`INSERT INTO ${t.sql} (id, org, scope, channel, max_count, window_seconds, created_at)
      VALUES ('keep', 'acme', 'channel', 'sms', 3, 60, '2020-01-01T00:00:00Z')`);
    await migrateRulesTable(pool, t);
    await migrateRulesTable(pool, t);
    const { rows } = await pool.query<{ id: string; max_count: number; created_at: Date }>(`SELECT id, max_count, created_at FROM ${t.sql}`);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.max_count, 3);
    assert.equal(rows[0]?.created_at.toISOString(), "2020-01-01T00:00:00.000Z");
  });

  it("lets instances starting together migrate at once (advisory lock, no race on CREATE)", async () => {
    // without the lock, 8 concurrent CREATE TABLE IF NOT EXISTS fail most rounds ("pg_type_typname_nsp_index")
    const pools = Array.from({ length: 8 }, () => testPool());
    try {
      for (let round = 0; round < 3; round++) {
        const t = rulesTable(`${schema}.together_${round}`);
        await Promise.all(pools.map((p) => migrateRulesTable(p, t)));
        assert.equal((await columns(pool, schema, `together_${round}`)).size, 17);
      }
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it("adds the timestamps to a hand-made §4 table, keeping its rows", async () => {
    await pool.query(`CREATE TABLE "${schema}".legacy (id text, org text, name text, enabled boolean, scope text, channel text,
      max_count int, window_seconds int, window_type text, applies_to_categories text[], per text[], match jsonb, disposition text,
      PRIMARY KEY (org, id))`);
    await pool.query(`INSERT INTO "${schema}".legacy (id, org, scope, channel, max_count, window_seconds) VALUES ('old', 'acme', 'global', '*', 9, 60)`);
    await migrateRulesTable(pool, rulesTable(`${schema}.legacy`));
    const { rows } = await pool.query<{ id: string; created_at: Date }>(`SELECT id, created_at FROM "${schema}".legacy`);
    assert.equal(rows[0]?.id, "old");
    assert.ok(rows[0]?.created_at instanceof Date);
  });

  it("gives a rules table of version 0.1 the enforcement and counts columns, its rows enforced per recipient as before", async () => {
    const t = rulesTable(`${schema}.v01`);
    await pool.query(`CREATE TABLE ${t.sql} (id text NOT NULL, org text NOT NULL, name text, enabled boolean NOT NULL DEFAULT true,
      scope text NOT NULL, channel text NOT NULL, max_count integer NOT NULL, window_seconds integer NOT NULL,
      window_type text NOT NULL DEFAULT 'rolling', applies_to_categories text[] NOT NULL DEFAULT '{}', per text[] NOT NULL DEFAULT '{}',
      match jsonb NOT NULL DEFAULT '{}', disposition text NOT NULL DEFAULT 'skip', created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (org, id))`);
    await pool.query(`INSERT INTO ${t.sql} (id, org, scope, channel, max_count, window_seconds) VALUES ('old', 'acme', 'channel', 'sms', 2, 60)`);
    await migrateRulesTable(pool, t);
    await migrateRulesTable(pool, t);
    const { rows } = await pool.query<{ id: string; enforcement: string; counts: string }>(`SELECT id, enforcement, counts FROM ${t.sql}`);
    assert.deepEqual(rows, [{ id: "old", enforcement: "enforce", counts: "per_recipient" }]);
  });

  it("refuses a table that lacks a column the rules need, and leaves it as it was", async () => {
    await pool.query(`CREATE TABLE "${schema}".partial (id text, org text, PRIMARY KEY (org, id))`);
    await assert.rejects(migrateRulesTable(pool, rulesTable(`${schema}.partial`)), /lacks column\(s\) name, enabled, scope/);
    assert.equal((await columns(pool, schema, "partial")).size, 2);
  });
});
