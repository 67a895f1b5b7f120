/** A rule write: the rule lists of (org, channel) are out of date; channel `"*"` means every channel of the org. */
export interface RuleChange {
  org: string;
  channel: string;
}

export type BusEvent =
  | ({ kind: "changed" } & RuleChange)
  /** changes may have been missed (the bus was disconnected): forget everything */
  | { kind: "resync" };

/**
 * Carries rule changes between Node-RED instances (Redis pub/sub today;
 * PostgreSQL LISTEN/NOTIFY fits the same shape). An instance does not hear its own
 * publications: it invalidates locally before publishing.
 */
export interface InvalidationBus {
  publish(change: RuleChange): Promise<void>;
  subscribe(listener: (event: BusEvent) => void): () => void;
  /** Resolves once every connection is closed. */
  close(): Promise<void>;
}

/** The message on the wire; `origin` lets an instance skip its own. */
export interface BusMessage extends RuleChange {
  origin: string;
}

export function parseBusMessage(text: string): BusMessage | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null) return undefined;
    const { org, channel, origin } = value as Record<string, unknown>;
    if (typeof org !== "string" || typeof channel !== "string" || typeof origin !== "string") return undefined;
    return { org, channel, origin };
  } catch {
    return undefined;
  }
}
