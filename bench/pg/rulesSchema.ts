import { Client } from "pg";
import type { InlineRule } from "../scenarios";

/** The table the cap-config is pointed at inside a bench schema: its own migration creates it there. */
export const RULES_TABLE = "frequency_caps";

const TABLE_WAIT_MS = 15_000;
const POLL_MS = 50;

/** One bench connection to PostgreSQL, for setup SQL only (the cap-config has its own pool). */
export class BenchPg {
  private constructor(private readonly client: Client) {}

  /** Connects, or throws at once: no retry, so a missing PostgreSQL fails the run instead of holding it. */
  static async connect(url: string, onError: (err: Error) => void): Promise<BenchPg> {
    const client = new Client({ connectionString: url, connectionTimeoutMillis: 5_000, application_name: "sgbench" });
    client.on("error", onError);
    try {
      await client.connect();
    } catch (err) {
      await client.end().catch(() => undefined);
      throw new Error(`PostgreSQL at ${redacted(url)}: ${(err as Error).message}`);
    }
    return new BenchPg(client);
  }

  async version(): Promise<string> {
    const { rows } = await this.client.query<{ server_version: string }>("SHOW server_version");
    return rows[0]?.server_version.split(" ")[0] ?? "unknown";
  }

  /** An empty schema the cap-config will migrate into. */
  async createSchema(schema: string): Promise<void> {
    await this.client.query(`CREATE SCHEMA ${quoted(schema)}`);
  }

  /** Resolves once `schema.frequency_caps` exists (the cap-config's migration commits it with its index). */
  async waitForTable(schema: string, timeoutMs = TABLE_WAIT_MS): Promise<void> {
    const name = `${schema}.${RULES_TABLE}`;
    const until = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await this.client.query<{ t: string | null }>("SELECT to_regclass($1)::text AS t", [name]);
      if (rows[0]?.t) return;
      if (Date.now() > until) throw new Error(`the cap-config did not create ${name} within ${timeoutMs} ms (migration failed?)`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** The caps as enabled rows of `org`, in one statement; column defaults spelled out so they equal the inline rules' defaults. */
  async insertRules(schema: string, org: string, rules: readonly InlineRule[]): Promise<void> {
    const values: unknown[] = [];
    const tuples = rules.map((rule) => {
      const base = values.length;
      values.push(rule.id, org, rule.scope, rule.channel, rule.max_count, rule.window_seconds);
      const p = (i: number): string => `$${base + i}`;
      return `(${p(1)}, ${p(2)}, NULL, true, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, 'rolling', '{}'::text[], '{}'::text[], '{}'::jsonb, 'skip')`;
    });
    await this.client.query(
      `INSERT INTO ${quoted(schema)}.${quoted(RULES_TABLE)}
         (id, org, name, enabled, scope, channel, max_count, window_seconds, window_type,
          applies_to_categories, per, match, disposition)
       VALUES ${tuples.join(", ")}`,
      values,
    );
  }

  async dropSchema(schema: string): Promise<void> {
    await this.client.query(`DROP SCHEMA IF EXISTS ${quoted(schema)} CASCADE`);
  }

  /** Names of the schemas starting with `prefix`. */
  async schemasUnder(prefix: string): Promise<string[]> {
    const { rows } = await this.client.query<{ nspname: string }>(
      "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1) ORDER BY nspname",
      [prefix],
    );
    return rows.map((r) => r.nspname);
  }

  end(): Promise<void> {
    return this.client.end();
  }
}

/** Bench schema names are built from [a-z0-9_] only; refuse anything else rather than trust quoting. */
function quoted(identifier: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(identifier)) throw new Error(`not a bench SQL identifier: ${JSON.stringify(identifier)}`);
  return `"${identifier}"`;
}

function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(unparsable DATABASE_URL)";
  }
}
