import { ownValue } from "../ownKeys";
import { dropAt, type DeferQueue, type DeferredMsg } from "./heldQueue";

/**
 * What the admin API tells of held msgs (SPEC §6): per gate how many and when
 * the next is due, and one recipient's held msgs, without their bodies. The
 * queues keep no index by recipient, so a recipient's listing reads held msgs
 * up to a bound (HELD_SCAN_LIMIT over all the gates) and says when it stopped
 * short.
 */

/** Most held msgs one recipient listing looks at, over all the cap-config's gates. */
export const HELD_SCAN_LIMIT = 10_000;

/** The meta fields that say whose a held msg is: its org, and its recipient as the store keys it (holdOrExpire). */
const ORG = "org";
const RECIPIENT_KEY = "recipientKey";
/** the recipient itself, as a throughput-gate's paced msgs and parked msgs keep it */
const RECIPIENT = "recipient";
/** set on a parked msg (parking.ts): the output it leaves by */
const LEAVES_BY = "leavesBy";
/** set on a throughput-gate's paced msg: its ceiling */
const CEILING = "ceiling";

/** The meta a gate holds a msg with, so a listing can tell whose it is: its org and its recipient as the store keys it (its HMAC under hashRecipients). */
export function holderMeta(org: string, recipientToken: string): Record<string, string> {
  return { [ORG]: org, [RECIPIENT_KEY]: recipientToken };
}

export interface HeldGate {
  gate: string;
  count: number;
  /** ISO; null when the queue is empty */
  next_due_at: string | null;
}

export interface HeldRow {
  gate: string;
  id: string;
  /** ISO: when it is due to be released */
  due_at: string;
  /** why it is held: the gate's reason (frequency_capped, quiet_hours), "paced" (a throughput-gate's), "parked" (kept by a closing gate for its next deployment) */
  reason: string | null;
  deferrals: number;
  /** ISO: when it leaves by skipped (defer_expired) if not released by then: the earlier of its expiresAt and the gate's deferMax; null: never */
  expires_at: string | null;
}

export interface HeldListing {
  held: HeldRow[];
  /** held msgs looked at */
  scanned: number;
  /** false: the bound was reached before every held msg was looked at */
  complete: boolean;
}

/** Whose msgs to list: the org, and the recipient as the store keys it; `tokenOf` keys a recipient a msg keeps as it is. */
export interface HolderQuery {
  org: string;
  recipientToken: string;
  tokenOf(recipient: string): string;
  /** the org of a held msg that names none */
  defaultOrg: string;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Per gate, how many msgs its queue holds and when the next can be released. */
export async function heldByGate(gates: readonly string[], queueOf: (gate: string) => DeferQueue): Promise<HeldGate[]> {
  return Promise.all(gates.map(async (gate) => {
    const queue = queueOf(gate);
    const [count, next] = await Promise.all([queue.size(), queue.nextDueAt()]);
    return { gate, count, next_due_at: next === null ? null : iso(next) };
  }));
}

/** A test of whether a held msg is the recipient's: it matches on the key the gate stored, or on the recipient it kept, keyed the same way. */
export function holderMatcher(query: HolderQuery): (held: DeferredMsg) => boolean {
  // a throughput-gate's msgs keep the recipient itself: each one keyed once per listing
  const tokens = new Map<string, string>();
  return (held) => {
    const meta = held.meta;
    if (meta === null || typeof meta !== "object") return false;
    const org = ownValue(meta, ORG);
    if ((typeof org === "string" && org !== "" ? org : query.defaultOrg) !== query.org) return false;
    const key = ownValue(meta, RECIPIENT_KEY);
    if (key !== undefined) return key === query.recipientToken;
    const recipient = ownValue(meta, RECIPIENT);
    if (typeof recipient !== "string") return false;
    let token = tokens.get(recipient);
    if (token === undefined) tokens.set(recipient, (token = query.tokenOf(recipient)));
    return token === query.recipientToken;
  };
}

function reasonOf(held: DeferredMsg): string | null {
  const meta = held.meta !== null && typeof held.meta === "object" ? held.meta : undefined;
  if (meta && ownValue(meta, LEAVES_BY) !== undefined) return "parked";
  if (meta && ownValue(meta, CEILING) !== undefined) return "paced";
  const admission = held.msg?.admission;
  const reason = admission !== null && typeof admission === "object" ? (admission as { reason?: unknown }).reason : undefined;
  return typeof reason === "string" ? reason : null;
}

function rowOf(gate: string, held: DeferredMsg): HeldRow & { at: number } {
  const expires = dropAt(held);
  return {
    at: held.dueAt,
    gate, id: held.id, due_at: iso(held.dueAt), reason: reasonOf(held), deferrals: held.deferrals,
    expires_at: expires === undefined ? null : iso(expires),
  };
}

/**
 * The held msgs `matches` picks, from each gate's queue in turn, looking at
 * `limit` held msgs at most over all of them; earliest due first. A gate left
 * unread once the bound is reached makes the listing incomplete if it holds any.
 */
export async function heldMatching(
  gates: readonly string[], queueOf: (gate: string) => DeferQueue, matches: (held: DeferredMsg) => boolean, limit = HELD_SCAN_LIMIT,
): Promise<HeldListing> {
  const rows: (HeldRow & { at: number })[] = [];
  let scanned = 0;
  let complete = true;
  for (const gate of gates) {
    const queue = queueOf(gate);
    if (scanned >= limit) {
      if ((await queue.size()) > 0) complete = false;
      continue;
    }
    const scan = await queue.scan(limit - scanned);
    scanned += scan.scanned;
    if (!scan.complete) complete = false;
    for (const held of scan.msgs) if (matches(held)) rows.push(rowOf(gate, held));
  }
  rows.sort((a, b) => a.at - b.at || (a.gate < b.gate ? -1 : a.gate > b.gate ? 1 : 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { held: rows.map(({ at: _at, ...row }) => row), scanned, complete };
}
