import { withDefaults, type CapRule, type CapRuleInput } from "../core/rules/rules";
import { RULE_COLUMNS } from "./rulesTable";

/** One row of the rules table as pg returns it (text[] as arrays, jsonb parsed, timestamptz as Date). */
export interface RuleRow {
  id: string;
  org: string;
  name: string | null;
  enabled: boolean | null;
  scope: string | null;
  channel: string | null;
  max_count: number | null;
  window_seconds: number | null;
  window_type: string | null;
  applies_to_categories: string[] | null;
  per: string[] | null;
  match: unknown;
  disposition: string | null;
  enforcement: string | null;
  counts: string | null;
  created_at: Date | null;
  updated_at: Date | null;
}

/** A rule as stored: the §4 shape with its org and timestamps. */
export type StoredRule = CapRule & { org: string; created_at: string; updated_at: string };

export const SELECT_COLUMNS = RULE_COLUMNS.join(", ");

/** `org/id`, how a warning names a row. */
export function rowLabel(row: Pick<RuleRow, "org" | "id">): string {
  return `(org "${row.org}", id "${row.id}")`;
}

/**
 * The row as a rule input for the schema: NULLs left out (so the schema's
 * defaults and required checks apply), timestamps as ISO text.
 */
export function rowToInput(row: RuleRow): CapRuleInput {
  const input: Record<string, unknown> = {};
  for (const column of RULE_COLUMNS) {
    const value: unknown = row[column];
    if (value === null || value === undefined) continue;
    input[column] = value instanceof Date ? value.toISOString() : value;
  }
  return input;
}

/** A row that passed the schema, in the §4 shape. */
export function storedRule(row: RuleRow): StoredRule {
  const input = rowToInput(row);
  return {
    ...withDefaults(input),
    org: row.org,
    created_at: typeof input.created_at === "string" ? input.created_at : "",
    updated_at: typeof input.updated_at === "string" ? input.updated_at : "",
  };
}
