import { createHash } from "node:crypto";
import type { Pool, PoolClient } from "pg";
import type { RulesTable } from "./tableName";

/** Every column the repository reads or writes. */
export const RULE_COLUMNS = [
  "id", "org", "name", "enabled", "scope", "channel", "max_count", "window_seconds", "window_type",
  "applies_to_categories", "per", "match", "disposition", "enforcement", "counts", "created_at", "updated_at",
] as const;

/** The table part of the migration, in order; each statement is idempotent and none drops or rewrites data. */
export function migrationStatements(t: RulesTable): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.sql} (
      id text NOT NULL,
      org text NOT NULL,
      name text,
      enabled boolean NOT NULL DEFAULT true,
      scope text NOT NULL CHECK (scope IN ('channel', 'global')),
      channel text NOT NULL,
      max_count integer NOT NULL,
      window_seconds integer NOT NULL,
      window_type text NOT NULL DEFAULT 'rolling',
      applies_to_categories text[] NOT NULL DEFAULT '{}',
      per text[] NOT NULL DEFAULT '{}',
      match jsonb NOT NULL DEFAULT '{}',
      disposition text NOT NULL DEFAULT 'skip',
      enforcement text NOT NULL DEFAULT 'enforce',
      counts text NOT NULL DEFAULT 'per_recipient',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (org, id)
    )`,
    // a table created by hand with the §4 columns only gains the timestamps (no rewrite: now() is a fast default)
    `ALTER TABLE ${t.sql} ADD COLUMN IF NOT EXISTS created_at timestamptz NOT NULL DEFAULT now()`,
    `ALTER TABLE ${t.sql} ADD COLUMN IF NOT EXISTS updated_at timestamptz NOT NULL DEFAULT now()`,
    // 0.2: shadow caps (SPEC §4); a constant default, so existing rows read as enforced without a rewrite
    `ALTER TABLE ${t.sql} ADD COLUMN IF NOT EXISTS enforcement text NOT NULL DEFAULT 'enforce'`,
    // 0.3: total caps (SPEC §4 counts); existing rows read as per-recipient caps, as they counted
    `ALTER TABLE ${t.sql} ADD COLUMN IF NOT EXISTS counts text NOT NULL DEFAULT 'per_recipient'`,
  ];
}

/** Run after the columns are known to be there. */
export function indexStatement(t: RulesTable): string {
  return `CREATE INDEX IF NOT EXISTS ${t.indexSql} ON ${t.sql} (org, channel) WHERE enabled`;
}

/** The advisory lock key of one table: two instances migrating the same table wait for each other. */
export function migrationLockKey(t: RulesTable): string {
  const digest = createHash("sha256").update(`sendgate:frequency-caps:${t.sql}`).digest();
  return digest.readBigInt64BE(0).toString();
}

async function missingColumns(client: PoolClient, t: RulesTable): Promise<string[]> {
  const { rows } = await client.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns
      WHERE table_schema = COALESCE($1, current_schema()) AND table_name = $2`,
    [t.schema ?? null, t.table],
  );
  const present = new Set(rows.map((r) => r.column_name));
  return RULE_COLUMNS.filter((c) => !present.has(c));
}

/**
 * Creates the rules table and its (org, channel) index when they are missing,
 * under an advisory lock held for the transaction. Safe to run on every start.
 * Throws when an existing table lacks a column the rules need (it is not altered beyond the timestamps, enforcement and counts).
 */
export async function migrateRulesTable(pool: Pool, t: RulesTable): Promise<void> {
  const client = await pool.connect();
  let failed: unknown;
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1::bigint)", [migrationLockKey(t)]);
    for (const statement of migrationStatements(t)) await client.query(statement);
    const missing = await missingColumns(client, t);
    if (missing.length > 0) throw new Error(`rules table ${t.display} lacks column(s) ${missing.join(", ")}`);
    await client.query(indexStatement(t));
    await client.query("COMMIT");
  } catch (err) {
    failed = err;
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    // a client whose transaction broke is not returned to the pool for reuse
    client.release(failed instanceof Error ? failed : undefined);
  }
}
