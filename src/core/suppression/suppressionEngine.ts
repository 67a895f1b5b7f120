import { StoreUnavailableError } from "../errors";
import { recipientToken } from "../keys";
import type { Send } from "../send";
import type { StoreAccess } from "../storeAccess";
import type { SuppressionWrite } from "../stores/admissionStore";
import { bodyHash } from "./canonicalJson";
import type { SuppressionEntry } from "./suppressionEntry";
import { blockListIndexField, blockListIndexKey, blockListKey, duplicateMarkKey } from "./suppressionKeys";

export interface SuppressionEngineOptions {
  access: StoreAccess;
  keyPrefix: string;
  /** set: keys and stored entries hold an HMAC of the recipient, never the address */
  hmacSecret?: string;
}

/** What the block list holds for one listed recipient. */
export type ListedEntry = Partial<SuppressionEntry> & { channel: string };

export type SuppressionDecision =
  | { kind: "clear"; markKey?: string; member: string }
  | { kind: "opted_out"; entry: ListedEntry }
  | { kind: "duplicate"; firstMember: string; retryAfterMs: number }
  | { kind: "fail_open"; error: StoreUnavailableError };

function parsedEntry(field: string, json: string): ListedEntry {
  try {
    return { ...(JSON.parse(json) as Partial<SuppressionEntry>), channel: field };
  } catch {
    return { channel: field };
  }
}

/** The suppression-gate's core: block list per (org, channel or "*", recipient) and duplicate content. */
export class SuppressionEngine {
  constructor(private readonly options: SuppressionEngineOptions) {}

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
    const outcome = await this.options.access.decide(send.org, send.channel, (store) => store.checkSuppression({
      listKey, channel: send.channel, member: send.messageId, markWindowMs: duplicateWindowSeconds * 1000,
      ...(markKey !== undefined ? { markKey } : {}),
    }));
    if (outcome instanceof StoreUnavailableError) return { kind: "fail_open", error: outcome };
    if (outcome.kind === "listed") return { kind: "opted_out", entry: parsedEntry(outcome.field, outcome.entry) };
    if (outcome.kind === "duplicate") return { kind: "duplicate", firstMember: outcome.firstMember, retryAfterMs: outcome.retryAfterMs };
    return { kind: "clear", member: send.messageId, ...(outcome.marked && markKey !== undefined ? { markKey } : {}) };
  }

  suppress(entries: readonly SuppressionEntry[]): Promise<void> {
    return this.write(entries, true);
  }

  unsuppress(entries: readonly Pick<SuppressionEntry, "org" | "channel" | "recipient">[]): Promise<void> {
    return this.write(entries, false);
  }

  /** One page of the org's block list; cursor "0" starts, and comes back at the end. */
  async list(org: string, cursor: string, count: number): Promise<{ cursor: string; entries: SuppressionEntry[] }> {
    const page = await this.options.access.callAdmin((store) => store.listSuppressions(blockListIndexKey(this.options.keyPrefix, org), cursor, count));
    return { cursor: page.cursor, entries: page.entries.map((json) => JSON.parse(json) as SuppressionEntry) };
  }

  private write(entries: readonly Pick<SuppressionEntry, "org" | "channel" | "recipient">[], add: boolean): Promise<void> {
    const writes: SuppressionWrite[] = entries.map((entry) => {
      const recipient = this.token(entry.recipient);
      const stored = { ...entry, recipient };
      return {
        listKey: blockListKey(this.options.keyPrefix, entry.org, recipient),
        field: entry.channel,
        indexKey: blockListIndexKey(this.options.keyPrefix, entry.org),
        indexField: blockListIndexField(entry.channel, recipient),
        ...(add ? { entry: JSON.stringify(stored) } : {}),
      };
    });
    return this.options.access.callAdmin((store) => store.writeSuppressions(writes));
  }
}
