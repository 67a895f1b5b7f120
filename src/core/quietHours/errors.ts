/**
 * A quiet-hours setting (gate property, `msg.timezone` or `msg.quietHours`)
 * that cannot be used. `field` names the culprit (`start`, `end`, `days`,
 * `timezone`, `jitter`, possibly with the prefix the caller asked for) and
 * the message starts with it, e.g. `timezone: unknown time zone "Mars/Olympus"`.
 */
export class QuietHoursError extends Error {
  readonly code = "INVALID_QUIET_HOURS";
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = "QuietHoursError";
  }
}
