import type { AdmissionClaim } from "./admission";
import type { StoreAccess } from "./storeAccess";
import type { ReleaseSpec } from "./stores/admissionStore";

/**
 * Gives back the claims one cap-config's store holds for a msg: one atomic
 * release per member (a msg's claims share its messageId). Returns how many
 * entries were still held.
 */
export async function releaseClaims(access: StoreAccess, claims: readonly AdmissionClaim[]): Promise<number> {
  const byMember = new Map<string, ReleaseSpec[]>();
  for (const claim of claims) {
    const specs = byMember.get(claim.member) ?? [];
    for (const key of claim.keys) specs.push({ key, kind: claim.kind === "cap" ? "z" : "k" });
    byMember.set(claim.member, specs);
  }
  let given = 0;
  for (const [member, specs] of byMember) given += await access.call((store) => store.release(member, specs));
  return given;
}
