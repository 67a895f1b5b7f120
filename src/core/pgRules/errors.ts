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
