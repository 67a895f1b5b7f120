/**
 * The package's errors print as their message, which starts with the field
 * or the reason (SPEC §3): Node-RED writes `String(err)` into a Catch node's
 * msg.error.message, and a class name there is noise a flow strips.
 */
abstract class SendgateError extends Error {
  override toString(): string {
    return this.message;
  }
}

/** A send whose fields break the contract of SPEC §2; `field` names the culprit. */
export class SendFieldError extends SendgateError {
  readonly code = "INVALID_SEND";
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = "SendFieldError";
  }
}

/** Rules (inline or loaded) that fail the schema; every problem is listed. */
export class RuleValidationError extends SendgateError {
  readonly code = "INVALID_RULES";
  constructor(readonly problems: string[]) {
    super(`invalid frequency cap rules: ${problems.join("; ")}`);
    this.name = "RuleValidationError";
  }
}

/** A cap-config whose properties or rules cannot be used; every problem is listed. */
export class ConfigError extends SendgateError {
  readonly code = "INVALID_CONFIG";
  constructor(readonly problems: string[]) {
    super(`cap-config is not usable: ${problems.join("; ")}`);
    this.name = "ConfigError";
  }
}

/**
 * A gate setting the flow holds that the gate cannot run with; `field` is the
 * property, `label` what the dialog calls it (the status shows the label).
 */
export class SettingError extends SendgateError {
  readonly code = "INVALID_SETTING";
  constructor(readonly field: string, message: string, readonly label: string = field) {
    super(message);
    this.name = "SettingError";
  }
}

/**
 * timeout: a sent call was not answered in time; error: the store answered
 * with a failure; not_ready: no connection; circuit_open: not called, the
 * breaker is open; overloaded: not called, the send queue is full (SPEC §9).
 */
export type StoreFailureKind = "timeout" | "error" | "circuit_open" | "not_ready" | "overloaded";

/** The counter store could not answer in time (or at all). */
export class StoreUnavailableError extends SendgateError {
  readonly code = "STORE_UNAVAILABLE";
  /** `message` says what happened; the error's message starts with the reason: overloaded, else store */
  constructor(readonly kind: StoreFailureKind, message: string, override readonly cause?: unknown) {
    super(`${kind === "overloaded" ? "overloaded" : "store"}: ${message}`);
    this.name = "StoreUnavailableError";
  }
}
