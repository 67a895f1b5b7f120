/** One counter a claim checks and fills. */
export interface CounterSpec {
  key: string;
  windowMs: number;
  /** effective max; 0 blocks every send */
  max: number;
  /** calendar caps: the instant (epoch ms) the period ends and every entry frees at once; absent for rolling */
  resetAt?: number;
}

export interface CounterOutcome {
  /** entries in the window after the claim (or at the refusal) */
  count: number;
  /** this messageId already held a slot in the counter */
  alreadyHeld: boolean;
  /** ms until this counter has a free slot; null when it is not blocking or never frees (max 0) */
  retryAfterMs: number | null;
  blocking: boolean;
}

export interface ClaimOutcome {
  allowed: boolean;
  /** the store's clock, ms since epoch */
  nowMs: number;
  counters: CounterOutcome[];
}

export type StoreState = "connecting" | "ready" | "down";

/** The block-list check and duplicate mark of one send (lua/suppression.lua). */
export interface SuppressionCheck {
  /** the recipient's block list: channel (or "*") -> entry JSON */
  listKey: string;
  channel: string;
  member: string;
  /** the duplicate-content mark; absent when duplicate suppression is off */
  markKey?: string;
  markWindowMs: number;
}

export type SuppressionOutcome =
  /** mark: "new" made by this call, "held" already this member's (a retry), "none" not asked for */
  | { kind: "clear"; mark: "new" | "held" | "none" }
  | { kind: "listed"; field: string; entry: string }
  | { kind: "duplicate"; firstMember: string; retryAfterMs: number };

/** One block-list entry as stored: under the recipient (hot path) and in the org's index (listing). */
export interface SuppressionWrite {
  listKey: string;
  field: string;
  indexKey: string;
  indexField: string;
  /** entry JSON; absent = remove */
  entry?: string;
}

/** A claim to give back: a counter entry ("z") or a duplicate mark ("k"). */
export interface ReleaseSpec {
  key: string;
  kind: "z" | "k";
}

/**
 * Where counters, block lists and duplicate marks live. Both implementations
 * (memory, Redis) give the same answers for the same inputs; test/conformance
 * proves it.
 */
export interface AdmissionStore {
  readonly kind: "memory" | "redis" | "redis-cluster";
  /** answers over a network: calls need a timeout and a circuit breaker (SPEC §9) */
  readonly remote: boolean;
  /** Atomic check-and-claim of every counter: all or nothing (SPEC §5). */
  claim(member: string, counters: readonly CounterSpec[]): Promise<ClaimOutcome>;
  /** Read-only: each counter's count in its window and the wait until it has a free slot (null: free now, or never with max 0). */
  inspect(counters: readonly CounterSpec[]): Promise<{ count: number; retryAfterMs: number | null; full: boolean }[]>;
  /** Adds the member to every counter without checking; idempotent. Returns the counts. */
  record(member: string, counters: readonly CounterSpec[]): Promise<number[]>;
  /** Gives back the member's claims in one atomic step; returns how many were held. */
  release(member: string, claims: readonly ReleaseSpec[]): Promise<number>;
  checkSuppression(check: SuppressionCheck): Promise<SuppressionOutcome>;
  /** Writes (or, without entry, removes) block-list entries. */
  writeSuppressions(writes: readonly SuppressionWrite[]): Promise<void>;
  /** One page of an org's block-list index; cursor "0" starts and ends. */
  listSuppressions(indexKey: string, cursor: string, count: number): Promise<{ cursor: string; entries: string[] }>;
  state(): StoreState;
  onStateChange(listener: (state: StoreState) => void): () => void;
  close(): Promise<void>;
}
