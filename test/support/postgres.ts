import { execFile } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { randomBytes } from "node:crypto";
import { Pool } from "pg";
import { migrateRulesTable } from "../../src/postgres/rulesTable";
import { rulesTable, type RulesTable } from "../../src/postgres/tableName";

const run = promisify(execFile);

export const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";

/** A schema name no other test run uses; drop it with dropSchema. */
export function uniqueSchema(label = "t"): string {
  return `sgtest_${label}_${randomBytes(4).toString("hex")}`;
}

export function testPool(url = DATABASE_URL): Pool {
  const pool = new Pool({ connectionString: url, max: 4 });
  pool.on("error", () => undefined);
  return pool;
}

export async function createSchema(pool: Pool, schema: string): Promise<void> {
  await pool.query(`CREATE SCHEMA "${schema}"`);
}

export async function dropSchema(pool: Pool, schema: string): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** Runs a PostgreSQL binary, as the postgres OS user when the tests run as root (initdb refuses root). */
async function pgCommand(binary: string, args: string[]): Promise<void> {
  const path = join(PG_BIN, binary);
  if (process.getuid?.() === 0) await run("runuser", ["-u", "postgres", "--", path, ...args]);
  else await run(path, args);
}

/** A PostgreSQL cluster of the test's own (initdb in a temp dir, loopback port), started and stopped by the test. */
export class OwnPostgres {
  readonly dir = mkdtempSync(join(tmpdir(), "sendgate-pg-"));
  port = 0;

  static available(): boolean {
    return existsSync(join(PG_BIN, "initdb")) && existsSync(join(PG_BIN, "pg_ctl"));
  }

  get dataDir(): string {
    return join(this.dir, "data");
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async init(): Promise<void> {
    if (process.getuid?.() === 0) chownSync(this.dir, Number((await run("id", ["-u", "postgres"])).stdout.trim()), Number((await run("id", ["-g", "postgres"])).stdout.trim()));
    this.port = await freePort();
    await pgCommand("initdb", ["-D", this.dataDir, "-U", "postgres", "--auth=trust", "--no-sync"]);
  }

  async start(): Promise<void> {
    await pgCommand("pg_ctl", ["-D", this.dataDir, "-o", `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1`, "-l", join(this.dir, "log"), "-w", "start"]);
  }

  async stop(): Promise<void> {
    if (!existsSync(join(this.dataDir, "postmaster.pid"))) return;
    await pgCommand("pg_ctl", ["-D", this.dataDir, "-m", "fast", "-w", "stop"]);
  }

  cleanUp(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A schema of the test's own holding a migrated rules table; close it with closeMigratedSchema. */
export async function openMigratedSchema(label: string): Promise<{ pool: Pool; schema: string; table: RulesTable }> {
  const pool = testPool();
  const schema = uniqueSchema(label);
  await createSchema(pool, schema);
  const table = rulesTable(`${schema}.frequency_caps`);
  await migrateRulesTable(pool, table);
  return { pool, schema, table };
}

export async function closeMigratedSchema(db: { pool: Pool; schema: string }): Promise<void> {
  await dropSchema(db.pool, db.schema);
  await db.pool.end();
}
