import { ERROR_CODES, type AdmissionReason } from "../admission";
import { ConfigError, RuleValidationError, SendFieldError, StoreUnavailableError } from "../errors";
import { RulesUnavailableError } from "../rules/errors";

/** The outputs a msg leaves a gate by (SPEC §11: allowed, skipped, deferred; suppression-gate has the first two). */
export const GATE_OUTPUTS = ["allowed", "skipped", "deferred"] as const;
export type GateOutput = (typeof GATE_OUTPUTS)[number];

/** A metric label for "no reason": a plain allowed msg. */
export const NO_REASON = "none";
/** A reason this package did not write (a label value must come from a fixed set, never from a msg). */
export const OTHER = "other";

const REASONS: ReadonlySet<string> = new Set(Object.keys(ERROR_CODES));

/** A msg's reason as a label value: one of SPEC §3's reasons, `none`, or `other`. */
export function reasonLabel(reason: unknown): AdmissionReason | typeof NO_REASON | typeof OTHER {
  if (reason === undefined || reason === null || reason === "") return NO_REASON;
  return typeof reason === "string" && REASONS.has(reason) ? (reason as AdmissionReason) : OTHER;
}

export type ErrorReason = "invalid_send" | "store_unavailable" | "overloaded" | "rules_unavailable" | "config" | typeof OTHER;

/** Why a msg went to Catch, as a label value: its own bad input, a store failing closed, the queue full, rules or config. */
export function errorReason(err: unknown): ErrorReason {
  if (err instanceof SendFieldError) return "invalid_send";
  if (err instanceof StoreUnavailableError) return err.kind === "overloaded" ? "overloaded" : "store_unavailable";
  if (err instanceof RulesUnavailableError) return "rules_unavailable";
  if (err instanceof ConfigError || err instanceof RuleValidationError) return "config";
  return OTHER;
}
