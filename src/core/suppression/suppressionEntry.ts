import { SendFieldError } from "../errors";
import { emptyRecord } from "../ownKeys";
import { boundedText } from "../send";

/** One block-list entry (SPEC §8): this recipient gets nothing on this channel, or on any ("*"). */
export interface SuppressionEntry {
  org: string;
  channel: string;
  recipient: string;
  reason?: string;
  /** ISO time it was listed */
  at: string;
}

export interface EntryRules {
  channels: readonly string[];
  defaultOrg: string;
}

function text(field: string, value: unknown, required: boolean): string | undefined {
  if (value === undefined || value === null || value === "") {
    if (required) throw new SendFieldError(field, "is required");
    return undefined;
  }
  if (typeof value !== "string") throw new SendFieldError(field, `must be a string, got ${typeof value}`);
  if (value.trim() === "") throw new SendFieldError(field, "must not be blank");
  return boundedText(field, value);
}

/** Checks one entry as a control msg, an API body or an import row gives it; channel absent = "*". */
export function parseSuppressionEntry(raw: Record<string, unknown>, rules: EntryRules, now: Date): SuppressionEntry {
  const recipient = text("recipient", raw.recipient, true) as string;
  const channel = text("channel", raw.channel, false) ?? "*";
  if (channel !== "*" && !rules.channels.includes(channel)) {
    throw new SendFieldError("channel", `unknown channel ${JSON.stringify(channel)} (known: *, ${rules.channels.join(", ")})`);
  }
  const reason = text("reason", raw.reason, false);
  if (reason !== undefined && reason.length > 512) throw new SendFieldError("reason", "must be at most 512 characters");
  const org = text("org", raw.org, false) ?? rules.defaultOrg;
  const at = raw.at === undefined ? now.toISOString() : typeof raw.at === "string" || typeof raw.at === "number" ? String(raw.at) : "";
  if (Number.isNaN(Date.parse(at))) throw new SendFieldError("at", `not a time: ${JSON.stringify(raw.at)}`);
  return { org, channel, recipient, ...(reason !== undefined ? { reason } : {}), at };
}

/**
 * Reads a bulk import: a JSON array of entries, or CSV with a header naming
 * at least `recipient` (and optionally `channel`, `reason`, `org`). Every bad
 * row is named; nothing is imported unless every row is good.
 */
export function parseSuppressionImport(body: unknown, rules: EntryRules, now: Date): { entries: SuppressionEntry[]; problems: string[] } {
  const rows = typeof body === "string" ? csvRows(body) : body;
  if (typeof rows === "string") return { entries: [], problems: [rows] };
  if (!Array.isArray(rows)) return { entries: [], problems: ["body: must be a JSON array of entries or CSV text"] };
  const entries: SuppressionEntry[] = [];
  const problems: string[] = [];
  rows.forEach((row, i) => {
    try {
      if (typeof row !== "object" || row === null) throw new SendFieldError("entry", "must be an object");
      entries.push(parseSuppressionEntry(row as Record<string, unknown>, rules, now));
    } catch (err) {
      problems.push(`row ${i + 1}: ${(err as Error).message}`);
    }
  });
  return { entries, problems };
}

function csvRows(text: string): Record<string, string>[] | string {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== "");
  const header = splitCsvLine(lines[0] ?? "").map((h) => h.trim().toLowerCase());
  if (!header.includes("recipient")) return "csv: the first line must be a header naming recipient (and channel, reason, org)";
  return lines.slice(1).map((line) => {
    const cells = splitCsvLine(line);
    // header names come from the caller: a column named __proto__ or constructor is just a column
    const row = emptyRecord<string>();
    header.forEach((name, i) => {
      const cell = cells[i]?.trim();
      if (cell !== undefined && cell !== "") row[name] = cell;
    });
    return row;
  });
}

/** One CSV line: commas, with "quoted, cells" and "" for a quote inside them. */
function splitCsvLine(line: string): string[] {
  const cells: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') { cell += '"'; i++; }
      else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") { cells.push(cell); cell = ""; }
    else cell += ch;
  }
  cells.push(cell);
  return cells;
}
