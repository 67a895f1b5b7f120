import { encodeKeyPart } from "../caps/keys";
import { SendFieldError } from "../errors";
import { boundedText } from "../send";

/** What a throughput ceiling is counted per (SPEC §8, §11 keyType): the org, the org and channel, or any value the flow computes (within the org). */
export type CeilingScope =
  | { kind: "org" }
  | { kind: "channel"; channel: string }
  | { kind: "key"; value: string };

/**
 * `<prefix>:{<org>|t|<kind>[|<value>]}:tp`: a ceiling's GCRA state, in a hash
 * tag of its own (one cluster slot per ceiling). Every part is encoded (no
 * `|`, `:` or brace inside), so two ceilings never share a key, and a
 * recipient's tag (`{<org>|<recipient>}`, two parts) never equals one (three
 * or four).
 */
export function ceilingKey(prefix: string, org: string, scope: CeilingScope): string {
  const tail = scope.kind === "org" ? "o" : scope.kind === "channel" ? `c|${encodeKeyPart(scope.channel)}` : `k|${encodeKeyPart(scope.value)}`;
  return `${prefix}:{${encodeKeyPart(org)}|t|${tail}}:tp`;
}

/** How a ceiling is named to people (status, warnings, msg.admission.throughput_key). */
export function ceilingLabel(org: string, scope: CeilingScope): string {
  return scope.kind === "org" ? org : scope.kind === "channel" ? `${org}/${scope.channel}` : `${org}/${scope.value}`;
}

/** every msg of an org-keyed ceiling has this scope: one object, not one per msg */
export const ORG_SCOPE: CeilingScope = Object.freeze({ kind: "org" });

/** A key expression's value as a ceiling's name: a non-empty string or a number, bounded as every send field is. */
export function scopeValue(value: unknown): string {
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value !== "string" || value === "") throw new SendFieldError("key", `must be a non-empty string or a number, got ${value === "" ? "an empty string" : typeof value}`);
  return boundedText("key", value);
}
