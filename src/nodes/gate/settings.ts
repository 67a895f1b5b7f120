/** A seconds property of a gate (deferMax, jitter): absent or blank takes the default, anything else must be a number >= 0. */
export function secondsSetting(field: string, value: unknown, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${field}: must be seconds >= 0, got ${JSON.stringify(value)}`);
  return n;
}

/** A gate's httpResponse property, from the editor (a boolean) or a hand-written flow (a string). */
export function httpResponseSetting(value: unknown): boolean {
  return value === true || value === "true";
}
