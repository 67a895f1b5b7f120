import type { Pool } from "pg";
import type { RulesTable } from "./tableName";
import type { SuppressionEntry } from "../core/suppression/suppressionEntry";

/** Lock key for the migration, so instances starting together do not race on CREATE. */
const MIGRATION_LOCK = 0x5347_5355; // "SGSU"
const LOAD_PAGE = 5000;

/**
 * The durable block list in PostgreSQL (SPEC §8, table `suppressions` beside
 * the rules table). Written through on every change; read whole once at start
 * to fill the store. The send path never queries it.
 */
export class PgSuppressions {
  private constructor(private readonly db: Pool, readonly tableSql: string) {}

  /** Creates the table when missing (never drops or rewrites) and returns the writer. */
  static async open(db: Pool, rulesTable: RulesTable): Promise<PgSuppressions> {
    const tableSql = rulesTable.schema ? `"${rulesTable.schema}"."suppressions"` : `"suppressions"`;
    const client = await db.connect();
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
      await client.query(`CREATE TABLE IF NOT EXISTS ${tableSql} (
        org text NOT NULL,
        channel text NOT NULL,
        recipient text NOT NULL,
        reason text,
        at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org, channel, recipient)
      )`);
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
    return new PgSuppressions(db, tableSql);
  }

  async upsert(entries: readonly SuppressionEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.db.query(
      `INSERT INTO ${this.tableSql} (org, channel, recipient, reason, at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
       ON CONFLICT (org, channel, recipient) DO UPDATE SET reason = EXCLUDED.reason, at = EXCLUDED.at`,
      [entries.map((e) => e.org), entries.map((e) => e.channel), entries.map((e) => e.recipient),
        entries.map((e) => e.reason ?? null), entries.map((e) => e.at)],
    );
  }

  async remove(entries: readonly Pick<SuppressionEntry, "org" | "channel" | "recipient">[]): Promise<void> {
    if (entries.length === 0) return;
    await this.db.query(
      `DELETE FROM ${this.tableSql} t USING unnest($1::text[], $2::text[], $3::text[]) AS gone(org, channel, recipient)
        WHERE t.org = gone.org AND t.channel = gone.channel AND t.recipient = gone.recipient`,
      [entries.map((e) => e.org), entries.map((e) => e.channel), entries.map((e) => e.recipient)],
    );
  }

  /** Every entry, a page at a time (keyset pagination: steady on a large table). */
  async *all(): AsyncGenerator<SuppressionEntry[]> {
    let after: [string, string, string] = ["", "", ""];
    for (;;) {
      const { rows } = await this.db.query<{ org: string; channel: string; recipient: string; reason: string | null; at: Date }>(
        `SELECT org, channel, recipient, reason, at FROM ${this.tableSql}
          WHERE (org, channel, recipient) > ($1, $2, $3) ORDER BY org, channel, recipient LIMIT ${LOAD_PAGE}`,
        after,
      );
      if (rows.length === 0) return;
      yield rows.map((r) => ({ org: r.org, channel: r.channel, recipient: r.recipient, at: r.at.toISOString(), ...(r.reason !== null ? { reason: r.reason } : {}) }));
      const last = rows[rows.length - 1] as { org: string; channel: string; recipient: string };
      after = [last.org, last.channel, last.recipient];
    }
  }
}
