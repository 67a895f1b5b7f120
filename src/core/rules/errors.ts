/** A create for an (org, id) that already exists. */
export class RuleConflictError extends Error {
  readonly code = "RULE_EXISTS";
  constructor(readonly org: string, readonly id: string) {
    super(`a cap with id "${id}" already exists in org "${org}"`);
    this.name = "RuleConflictError";
  }
}

/** The rules of a send could not be loaded and none were loaded before. */
export class RulesUnavailableError extends Error {
  readonly code = "RULES_UNAVAILABLE";
  constructor(message: string, override readonly cause?: unknown) {
    super(message);
    this.name = "RulesUnavailableError";
  }
}

const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);
/** SQLSTATE: admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections (class 08 is checked apart) */
const UNAVAILABLE_STATES = new Set(["57P01", "57P02", "57P03", "53300"]);
const UNREACHABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection error and is not queryable|the database system is (starting up|shutting down)/i;

/**
 * Whether a database error says PostgreSQL could not be reached or went away
 * (refused, reset, shut down, timed out), not that the statement was wrong:
 * the write did not take, and may be tried again once the database is back.
 */
export function isDatabaseUnreachable(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === "string" && (UNREACHABLE_CODES.has(code) || UNAVAILABLE_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
  return typeof message === "string" && UNREACHABLE_MESSAGES.test(message);
}
