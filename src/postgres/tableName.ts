import { createHash } from "node:crypto";

/**
 * The rules table named by cap-config's `pgTable`: `table` or `schema.table`,
 * each part a lowercase SQL identifier. Only these quoted forms ever reach SQL
 * text; every value goes through a parameter.
 */
export interface RulesTable {
  /** as the operator wrote it, for messages */
  readonly display: string;
  readonly schema: string | undefined;
  readonly table: string;
  /** `"schema"."table"` or `"table"` */
  readonly sql: string;
  /** the (org, channel) index name, quoted, unqualified (it lives in the table's schema) */
  readonly indexSql: string;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
const MAX_IDENTIFIER = 63;

function partProblem(part: string): string | undefined {
  if (!IDENTIFIER.test(part)) return `"${part}" must be a lowercase SQL identifier (a-z, 0-9, _; not starting with a digit)`;
  if (part.length > MAX_IDENTIFIER) return `"${part}" is longer than ${MAX_IDENTIFIER} characters`;
  return undefined;
}

/** Why `text` cannot name the rules table, or undefined when it can. */
export function rulesTableProblem(text: unknown): string | undefined {
  if (typeof text !== "string" || text === "") return "pgTable: must name a table, e.g. frequency_caps";
  const parts = text.split(".");
  if (parts.length > 2) return `pgTable: "${text}" must be table or schema.table`;
  for (const part of parts) {
    const problem = partProblem(part);
    if (problem) return `pgTable: ${problem}`;
  }
  return undefined;
}

function quote(identifier: string): string {
  return `"${identifier}"`;
}

/** An index name derived from the table's, kept within PostgreSQL's 63 characters without truncation clashes. */
function indexName(table: string): string {
  const suffix = "_org_channel_idx";
  if (table.length + suffix.length <= MAX_IDENTIFIER) return `${table}${suffix}`;
  const hash = createHash("sha256").update(table).digest("hex").slice(0, 8);
  return `${table.slice(0, MAX_IDENTIFIER - suffix.length - 9)}_${hash}${suffix}`;
}

/** Parses `pgTable`; throws naming the problem. */
export function rulesTable(text: unknown): RulesTable {
  const problem = rulesTableProblem(text);
  if (problem) throw new Error(problem);
  const parts = (text as string).split(".");
  const table = parts[parts.length - 1];
  const schema = parts.length === 2 ? parts[0] : undefined;
  return {
    display: text as string,
    schema,
    table,
    sql: schema === undefined ? quote(table) : `${quote(schema)}.${quote(table)}`,
    indexSql: quote(indexName(table)),
  };
}
