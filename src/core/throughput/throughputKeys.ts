import { encodeKeyPart } from "../caps/keys";

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
