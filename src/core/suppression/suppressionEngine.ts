import { StoreUnavailableError } from "../errors";
import { recipientToken } from "../caps/keys";
import type { Send } from "../send";
import type { StoreAccess } from "../store/storeAccess";
import { mayHaveLanded } from "../store/storeFaults";
import type { Lane } from "../sendQueue/sendQueue";
import type { SuppressionCheck, SuppressionOutcome, SuppressionWrite } from "../store/admissionStore";
import { bodyHash } from "./canonicalJson";
import { markToken } from "./markValue";
import type { SuppressionEntry } from "./suppressionEntry";
import { blockListIndexField, blockListIndexKey, blockListKey, duplicateMarkKey } from "./suppressionKeys";

/** Where the block list is kept durably besides the store (PostgreSQL): written first, read at start. */
export interface SuppressionMirror {
  upsert(entries: readonly SuppressionEntry[]): Promise<void>;
  remove(entries: readonly Pick<SuppressionEntry, "org" | "channel" | "recipient">[]): Promise<void>;
}

export interface SuppressionEngineOptions {
  access: StoreAccess;
  keyPrefix: string;
  /** set: keys and stored entries hold an HMAC of the recipient, never the address */
  hmacSecret?: string;
  /** the block list must also be written to a mirror (PostgreSQL configured): refuse changes until it is attached */
  mirrored?: boolean;
  /** called after every block-list change reached the store (the memory store saves its file); the change is answered once it resolves */
  afterWrite?: () => void | Promise<void>;
}

/** What a block-list change did: entries written, and repeats of an (org, channel, recipient) merged into them. */
export interface WriteOutcome {
  written: number;
  repeatsMerged: number;
}

/** Each (org, channel, recipient) once, as its last occurrence, in the order of those last occurrences. */
function lastOfEach<T extends Pick<SuppressionEntry, "org" | "channel" | "recipient">>(entries: readonly T[]): T[] {
  const last = new Map<string, number>();
  entries.forEach((e, i) => last.set(JSON.stringify([e.org, e.channel, e.recipient]), i));
  if (last.size === entries.length) return [...entries];
  return entries.filter((e, i) => last.get(JSON.stringify([e.org, e.channel, e.recipient])) === i);
}

/** What the block list holds for one listed recipient. */
export type ListedEntry = Partial<SuppressionEntry> & { channel: string };

export type SuppressionDecision =
  /** `markKey`: the mark this attempt (`token`) made, to give back should a later gate refuse the msg */
  | { kind: "clear"; markKey?: string; member: string; token?: string }
  | { kind: "opted_out"; entry: ListedEntry }
  | { kind: "duplicate"; firstMember: string; retryAfterMs: number }
  /** `markKey`: a call sent that may have made its mark all the same (it timed out, its answer was lost) */
  | { kind: "fail_open"; error: StoreUnavailableError; markKey?: string; member?: string; token?: string };

function parsedEntry(field: string, json: string): ListedEntry {
  try {
    return { ...(JSON.parse(json) as Partial<SuppressionEntry>), channel: field };
  } catch {
    return { channel: field };
  }
}

/** The suppression-gate's core: block list per (org, channel or "*", recipient) and duplicate content. */
export class SuppressionEngine {
  private mirror: SuppressionMirror | undefined;
  private readonly checks: Lane<SuppressionCheck, SuppressionOutcome>;

  constructor(private readonly options: SuppressionEngineOptions) {
    this.checks = options.access.lane("suppression", (store, items, early) => store.checkSuppression(items, early));
  }

  /** From now on every change is written to the mirror first (it holds recipients as stored: HMACs when hashing). */
  attachMirror(mirror: SuppressionMirror): void {
    this.mirror = mirror;
  }

  /** Fills the store with entries read back from the mirror (recipients already as stored). */
  restore(stored: readonly SuppressionEntry[]): Promise<void> {
    return this.options.access.callAdmin((store) => store.writeSuppressions(stored.map((e) => this.writeOf(e, true))));
  }

  private token(recipient: string): string {
    return recipientToken(recipient, this.options.hmacSecret);
  }

  /** One store round trip: the block list, then (when on) the duplicate-content mark. */
  async check(send: Send, body: unknown, duplicateWindowSeconds: number): Promise<SuppressionDecision> {
    const recipient = this.token(send.recipient);
    const listKey = blockListKey(this.options.keyPrefix, send.org, recipient);
    const markKey = duplicateWindowSeconds > 0
      ? duplicateMarkKey(this.options.keyPrefix, send.org, recipient, send.channel, bodyHash(body))
      : undefined;
    const token = markToken();
    const outcome = await this.options.access.decide(send.org, send.channel, this.checks, {
      listKey, channel: send.channel, member: send.messageId, token, markWindowMs: duplicateWindowSeconds * 1000,
      ...(markKey !== undefined ? { markKey } : {}),
    });
    if (outcome instanceof StoreUnavailableError) {
      // a call that was sent may have made the mark: it goes on the msg, so a later refusal gives it back (this attempt's only)
      return { kind: "fail_open", error: outcome, ...(mayHaveLanded(outcome) && markKey !== undefined ? { markKey, member: send.messageId, token } : {}) };
    }
    if (outcome.kind === "listed") return { kind: "opted_out", entry: parsedEntry(outcome.field, outcome.entry) };
    if (outcome.kind === "duplicate") return { kind: "duplicate", firstMember: outcome.firstMember, retryAfterMs: outcome.retryAfterMs };
    // only a mark made now, or held with the attempt that made it (joined), is this msg's to give back: a retry of a
    // send that went out holds nothing
    return { kind: "clear", member: send.messageId, ...((outcome.mark === "new" || outcome.mark === "joined") && markKey !== undefined ? { markKey, token } : {}) };
  }

  /** Lists entries; a repeated (org, channel, recipient) is written once, the last one winning. */
  suppress(entries: readonly SuppressionEntry[]): Promise<WriteOutcome> {
    return this.write(entries, true);
  }

  unsuppress(entries: readonly Pick<SuppressionEntry, "org" | "channel" | "recipient">[]): Promise<WriteOutcome> {
    return this.write(entries, false);
  }

  /** One page of the org's block list; cursor "0" starts, and comes back at the end. */
  async list(org: string, cursor: string, count: number): Promise<{ cursor: string; entries: SuppressionEntry[] }> {
    const page = await this.options.access.callAdmin((store) => store.listSuppressions(blockListIndexKey(this.options.keyPrefix, org), cursor, count));
    return { cursor: page.cursor, entries: page.entries.map((json) => JSON.parse(json) as SuppressionEntry) };
  }

  private async write(entries: readonly Pick<SuppressionEntry, "org" | "channel" | "recipient">[], add: boolean): Promise<WriteOutcome> {
    // one statement must not touch a row twice (PostgreSQL refuses the whole upsert): the last repeat wins
    const stored = lastOfEach(entries.map((entry) => ({ ...entry, recipient: this.token(entry.recipient) })));
    if (this.options.mirrored && !this.mirror) {
      throw new StoreUnavailableError("not_ready", "the suppressions table in PostgreSQL is not reachable yet: the block list was not changed");
    }
    if (this.mirror) {
      if (add) await this.mirror.upsert(stored as SuppressionEntry[]);
      else await this.mirror.remove(stored);
    }
    await this.options.access.callAdmin((store) => store.writeSuppressions(stored.map((e) => this.writeOf(e, add))));
    await this.options.afterWrite?.();
    return { written: stored.length, repeatsMerged: entries.length - stored.length };
  }

  private writeOf(stored: Pick<SuppressionEntry, "org" | "channel" | "recipient">, add: boolean): SuppressionWrite {
    return {
      listKey: blockListKey(this.options.keyPrefix, stored.org, stored.recipient),
      field: stored.channel,
      indexKey: blockListIndexKey(this.options.keyPrefix, stored.org),
      indexField: blockListIndexField(stored.channel, stored.recipient),
      ...(add ? { entry: JSON.stringify(stored) } : {}),
    };
  }
}
