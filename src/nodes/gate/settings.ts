/** A gate's httpResponse property, from the editor (a boolean) or a hand-written flow (a string). */
export function httpResponseSetting(value: unknown): boolean {
  return value === true || value === "true";
}
