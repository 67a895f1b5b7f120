import type { QueryResult, QueryResultRow } from "pg";
import { RuleValidationError } from "../core/errors";
import { withDefaults, type CapRule, type CapRuleInput } from "../core/rules/rules";
import { ruleProblems } from "../core/schema/validateRules";
import { RuleConflictError } from "../core/rules/errors";
import { rowLabel, rowToInput, SELECT_COLUMNS, storedRule, type RuleRow, type StoredRule } from "./ruleRow";
import type { RulesTable } from "./tableName";

/** What the repository needs of a pg Pool (a Pool, or a Client, fits). */
export interface SqlQueryable {
  query<R extends QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}

export interface PgRuleRepositoryOptions {
  db: SqlQueryable;
  table: RulesTable;
  /** set: a channel rule naming another channel fails the schema */
  knownChannels?: readonly string[];
  /** told about every row that fails the schema (once per row until its problems change) */
  warn: (text: string) => void;
}

/** A stored row that fails the schema: never applied, named with every problem. */
export interface InvalidRow {
  org: string;
  id: string;
  problems: string[];
}

export interface RuleListing {
  rules: StoredRule[];
  invalid: InvalidRow[];
}

export interface UpdatedRule {
  rule: StoredRule;
  /** the channel the row had before, so both old and new rule lists can be invalidated */
  previousChannel: string;
}

export interface RemovedRule {
  org: string;
  id: string;
  channel: string;
}

const UNIQUE_VIOLATION = "23505";
const MAX_REMEMBERED_WARNINGS = 10_000;

/** The rules table: the lookup of a send's rules, and CRUD. Parameterised SQL only. */
export class PgRuleRepository {
  private loads = 0;
  private readonly warned = new Map<string, string>();

  constructor(private readonly options: PgRuleRepositoryOptions) {}

  /** How many rule-list queries (`rulesFor`) have been sent to PostgreSQL. */
  get loadCount(): number {
    return this.loads;
  }

  /** The enabled rules of (org, channel) and the org's enabled global rules; invalid rows skipped with a warning. */
  async rulesFor(org: string, channel: string): Promise<StoredRule[]> {
    this.loads++;
    const { rows } = await this.options.db.query<RuleRow>(
      `SELECT ${SELECT_COLUMNS} FROM ${this.options.table.sql}
        WHERE org = $1 AND enabled AND channel = ANY($2::text[])
        ORDER BY id`,
      [org, [channel, "*"]],
    );
    return this.sort(rows).rules;
  }

  /** Every rule of the org, enabled or not, and the rows that fail the schema. */
  async list(org: string): Promise<RuleListing> {
    const { rows } = await this.options.db.query<RuleRow>(
      `SELECT ${SELECT_COLUMNS} FROM ${this.options.table.sql} WHERE org = $1 ORDER BY id`,
      [org],
    );
    return this.sort(rows);
  }

  /** The rule, or null when absent; throws RuleValidationError when the row fails the schema. */
  async get(org: string, id: string): Promise<StoredRule | null> {
    const { rows } = await this.options.db.query<RuleRow>(
      `SELECT ${SELECT_COLUMNS} FROM ${this.options.table.sql} WHERE org = $1 AND id = $2`,
      [org, id],
    );
    const row = rows[0];
    if (!row) return null;
    const problems = this.problemsOf(row);
    if (problems.length > 0) throw new RuleValidationError(problems.map((p) => `row ${rowLabel(row)} ${p}`));
    return storedRule(row);
  }

  /** Inserts a rule of the org; throws RuleValidationError (every problem) or RuleConflictError. */
  async create(org: string, input: unknown): Promise<StoredRule> {
    const rule = this.checkedWrite(org, input);
    try {
      const { rows } = await this.options.db.query<RuleRow>(
        `INSERT INTO ${this.options.table.sql}
           (id, org, name, enabled, scope, channel, max_count, window_seconds, window_type,
            applies_to_categories, per, match, disposition, enforcement, counts)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14, $15)
         RETURNING ${SELECT_COLUMNS}`,
        writeValues(org, rule),
      );
      return storedRule(rows[0]);
    } catch (err) {
      if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw new RuleConflictError(org, rule.id);
      throw err;
    }
  }

  /** Replaces the rule (org, id) with `input` (PUT); null when there is no such rule. */
  async update(org: string, id: string, input: unknown): Promise<UpdatedRule | null> {
    const given = ruleObject(input);
    if ("id" in given && given.id !== id) throw new RuleValidationError([`id: must be "${id}", the id of the rule being updated`]);
    const rule = this.checkedWrite(org, { ...given, id });
    const { rows } = await this.options.db.query<RuleRow & { previous_channel: string }>(
      `WITH previous AS (
         SELECT channel FROM ${this.options.table.sql} WHERE org = $2 AND id = $1 FOR UPDATE
       )
       UPDATE ${this.options.table.sql} AS t
          SET name = $3, enabled = $4, scope = $5, channel = $6, max_count = $7, window_seconds = $8,
              window_type = $9, applies_to_categories = $10, per = $11, match = $12::jsonb,
              disposition = $13, enforcement = $14, counts = $15, updated_at = now()
         FROM previous
        WHERE t.org = $2 AND t.id = $1
        RETURNING ${SELECT_COLUMNS.split(", ").map((c) => `t.${c}`).join(", ")}, previous.channel AS previous_channel`,
      writeValues(org, rule),
    );
    const row = rows[0];
    return row ? { rule: storedRule(row), previousChannel: row.previous_channel } : null;
  }

  /** Deletes the rule; null when there was none. */
  async remove(org: string, id: string): Promise<RemovedRule | null> {
    const { rows } = await this.options.db.query<{ org: string; id: string; channel: string }>(
      `DELETE FROM ${this.options.table.sql} WHERE org = $1 AND id = $2 RETURNING org, id, channel`,
      [org, id],
    );
    return rows[0] ?? null;
  }

  /** The rule with defaults, or a RuleValidationError naming every problem; the org comes from the path. */
  private checkedWrite(org: string, input: unknown): CapRule {
    const given = ruleObject(input);
    if (given.org !== undefined && given.org !== org) {
      throw new RuleValidationError([`org: must be "${org}", the org the rule is written to`]);
    }
    const candidate = { ...given, org };
    const problems = ruleProblems(candidate, this.options.knownChannels);
    if (problems.length > 0) throw new RuleValidationError(problems);
    return withDefaults(candidate);
  }

  private problemsOf(row: RuleRow): string[] {
    return ruleProblems(rowToInput(row), this.options.knownChannels);
  }

  private sort(rows: RuleRow[]): RuleListing {
    const listing: RuleListing = { rules: [], invalid: [] };
    for (const row of rows) {
      const problems = this.problemsOf(row);
      const key = `${row.org}\u0000${row.id}`;
      if (problems.length === 0) {
        this.warned.delete(key);
        listing.rules.push(storedRule(row));
        continue;
      }
      listing.invalid.push({ org: row.org, id: row.id, problems });
      this.warnOnce(key, row, problems);
    }
    return listing;
  }

  private warnOnce(key: string, row: RuleRow, problems: string[]): void {
    const text = problems.join("; ");
    if (this.warned.get(key) === text) return;
    if (this.warned.size >= MAX_REMEMBERED_WARNINGS) this.warned.clear();
    this.warned.set(key, text);
    this.options.warn(`frequency cap row ${rowLabel(row)} in ${this.options.table.display} skipped: ${text}`);
  }
}

function ruleObject(input: unknown): CapRuleInput {
  if (typeof input !== "object" || input === null || Array.isArray(input)) throw new RuleValidationError(["rule: must be an object"]);
  return input as CapRuleInput;
}

function writeValues(org: string, rule: CapRule): unknown[] {
  return [
    rule.id, org, rule.name ?? null, rule.enabled, rule.scope, rule.channel, rule.max_count, rule.window_seconds,
    rule.window_type, rule.applies_to_categories, rule.per, JSON.stringify(rule.match), rule.disposition,
    rule.enforcement, rule.counts,
  ];
}
