import type { AdmissionClaim } from "../admission";
import { recipientKeyBase, totalKeyBase } from "./keys";
import { markValue } from "../suppression/markValue";
import type { TotalSpend } from "./totals/totalLeases";
import type { Lane } from "../sendQueue/sendQueue";
import type { StoreAccess } from "../store/storeAccess";
import type { ReleaseAnswer, ReleaseRequest } from "../store/admissionStore";

/** Whose claims a give-back may touch: keys under this cap-config's prefix and the msg's own recipient tag. */
export interface ClaimOwner {
  keyPrefix: string;
  org: string;
  /** the recipient as keys hold it (its HMAC when hashing is on) */
  recipientToken: string;
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isToken(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 65535;
}

/**
 * The release of one claim as found on a msg, or undefined when it is not a
 * claim this package writes for this msg: `msg.admission.claims` passes
 * through the flow (a function node may copy or rewrite it), so a give-back
 * must never delete what another msg, tenant or queue owns.
 */
export function releaseOf(claim: unknown, owner: ClaimOwner): CapRelease | ReleaseRequest | TotalRelease | undefined {
  if (typeof claim !== "object" || claim === null) return undefined;
  const c = claim as Partial<Record<string, unknown>>;
  if (typeof c.member !== "string" || typeof c.key !== "string") return undefined;
  const base = recipientKeyBase(owner.keyPrefix, owner.org, owner.recipientToken);
  if (c.kind === "cap") {
    const fields = c.fields;
    if (c.key !== `${base}:c` || !isToken(c.token) || !Array.isArray(fields) || !fields.every((f) => typeof f === "string")) return undefined;
    const shadow = Array.isArray(c.shadow_fields) ? c.shadow_fields.filter((f): f is string => typeof f === "string" && fields.includes(f)) : [];
    return { kind: "cap", key: c.key, member: c.member, token: c.token, fields: fields, ...(shadow.length > 0 ? { shadowFields: shadow } : {}) };
  }
  if (c.kind === "dup" && c.key.startsWith(`${base}:d:`)) {
    // a claim written before attempt tokens names the bare messageId, as its mark holds it
    return { kind: "mark", key: c.key, value: markValue(c.member, typeof c.token === "string" ? c.token : undefined) };
  }
  if (c.kind === "total" && c.key.startsWith(totalKeyBase(owner.keyPrefix, owner.org)) && typeof c.lease === "string" && isCount(c.bucket)
    && typeof c.spend === "string" && /^[0-9a-f]+(~\d+)?\.\d+\.\d+$/.test(c.spend) && isCount(c.spent_ms)) {
    return { kind: "total", spend: { key: c.key, lease: c.lease, bucket: c.bucket, id: c.spend, atMs: c.spent_ms } };
  }
  return undefined;
}

/** A claim's counter entries to give back, and which of its fields are shadow caps' (a claim written before shadow_fields counts all as enforced). */
export type CapRelease = Extract<ReleaseRequest, { kind: "cap" }> & { shadowFields?: readonly string[] };

/** A slot of a total cap to give back (to the lease it came from when that is this cap-config's). */
export interface TotalRelease {
  kind: "total";
  spend: TotalSpend;
}

/**
 * Gives back the claims one cap-config's store holds for a msg, each in its
 * own batched release. Returns how many entries were still held, how many of
 * the claims gave anything back (a claim released before gives nothing), and
 * the claims refused as not this msg's (the caller warns about them).
 *
 * A msg that holds its recipient's slots gets its total slots back unless
 * another attempt of it goes on under them (totalsStay).
 */
export async function releaseClaims(access: StoreAccess, lane: Lane<ReleaseRequest, ReleaseAnswer>, claims: readonly AdmissionClaim[], owner: ClaimOwner, refundTotal: (spend: TotalSpend) => Promise<boolean>): Promise<{ given: number; claimsGiven: number; refused: AdmissionClaim[] }> {
  const refused: AdmissionClaim[] = [];
  const caps: (CapRelease | ReleaseRequest)[] = [];
  const totals: TotalSpend[] = [];
  for (const claim of claims) {
    const request = releaseOf(claim, owner);
    if (!request) refused.push(claim);
    else if (request.kind === "total") totals.push(request.spend);
    else caps.push(request);
  }
  // only where total slots hang on the answer are a claim's shadow entries given back apart, to be left out of it
  const parts = totals.length > 0 ? caps.flatMap(partsOf) : caps.map((request, claim) => ({ request, claim, enforced: request.kind === "cap" }));
  const releasing = Promise.all(parts.map((part) => access.submit(lane, part.request)));
  let refunding: Promise<boolean[]>;
  if (totals.length > 0 && parts.some((part) => part.enforced)) {
    const answers = await releasing;
    refunding = totalsStay(parts, answers) ? Promise.resolve([]) : Promise.all(totals.map(refundTotal));
  } else {
    refunding = Promise.all(totals.map(refundTotal));
  }
  const [answers, totalGiven] = await Promise.all([releasing, refunding]);
  const totalsGiven = totalGiven.filter(Boolean).length;
  // a claim given back in two parts counts once
  const claimsGiven = new Set(parts.filter((_, i) => answers[i].given > 0).map((part) => part.claim)).size;
  return { given: answers.reduce((sum, a) => sum + a.given, 0) + totalsGiven, claimsGiven: claimsGiven + totalsGiven, refused };
}

/** One release call of a claim's: `claim` its index among the msg's, `enforced` whether it gives back enforced caps' entries. */
interface ReleasePart {
  request: ReleaseRequest;
  claim: number;
  enforced: boolean;
}

/** A claim's release, its shadow caps' entries apart from its enforced caps': a retry was told by the enforced alone (capEngine isRetry). */
function partsOf(request: CapRelease | ReleaseRequest, claim: number): ReleasePart[] {
  if (request.kind !== "cap") return [{ request, claim, enforced: false }];
  const shadow = "shadowFields" in request ? request.shadowFields ?? [] : [];
  const { kind, key, member, token } = request;
  const own = request.fields.filter((f) => !shadow.includes(f));
  const parts: ReleasePart[] = [];
  if (own.length > 0) parts.push({ request: { kind, key, member, token, fields: own }, claim, enforced: true });
  if (shadow.length > 0) parts.push({ request: { kind, key, member, token, fields: [...shadow] }, claim, enforced: false });
  return parts;
}

/**
 * Whether a msg's total slots stay spent after its recipient's slots were
 * given back. Another copy of the msg in flight beside it holds those slots
 * too, and when it held every one (a retry) it took no total slot of its
 * own: this give-back hands them all to it, its send goes on under this
 * one's total slots, and they stay. A copy that took slots of its own (this
 * one's had aged out) took its own total slot too, and a give-back that
 * finds nothing (a claim that failed open and never landed, slots aged out)
 * leaves no send behind: their total slots come back. Shadow caps' entries
 * play no part, as they played none in telling a retry.
 */
function totalsStay(parts: readonly ReleasePart[], answers: readonly ReleaseAnswer[]): boolean {
  let fields = 0;
  let given = 0;
  let handed = 0;
  parts.forEach((part, i) => {
    if (!part.enforced || part.request.kind !== "cap") return;
    fields += part.request.fields.length;
    given += answers[i]?.given ?? 0;
    handed += answers[i]?.handed ?? 0;
  });
  return given === 0 && handed > 0 && handed === fields;
}
