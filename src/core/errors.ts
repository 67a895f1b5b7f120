/** A send whose fields break the contract of SPEC §2; `field` names the culprit. */
export class SendFieldError extends Error {
  readonly code = "INVALID_SEND";
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = "SendFieldError";
  }
}

/** Rules (inline or loaded) that fail the schema; every problem is listed. */
export class RuleValidationError extends Error {
  readonly code = "INVALID_RULES";
  constructor(readonly problems: string[]) {
    super(`invalid frequency cap rules: ${problems.join("; ")}`);
    this.name = "RuleValidationError";
  }
}

/** A cap-config whose properties or rules cannot be used; every problem is listed. */
export class ConfigError extends Error {
  readonly code = "INVALID_CONFIG";
  constructor(readonly problems: string[]) {
    super(`cap-config is not usable: ${problems.join("; ")}`);
    this.name = "ConfigError";
  }
}

/**
 * timeout: a sent call was not answered in time; error: the store answered
 * with a failure; not_ready: no connection; circuit_open: not called, the
 * breaker is open; overloaded: not called, the send queue is full (SPEC §9).
 */
export type StoreFailureKind = "timeout" | "error" | "circuit_open" | "not_ready" | "overloaded";

/** The counter store could not answer in time (or at all). */
export class StoreUnavailableError extends Error {
  readonly code = "STORE_UNAVAILABLE";
  constructor(readonly kind: StoreFailureKind, message: string, override readonly cause?: unknown) {
    super(message);
    this.name = "StoreUnavailableError";
  }
}
