/** One counter a claim checks and fills. */
export interface CounterSpec {
  key: string;
  windowMs: number;
  /** effective max; 0 blocks every send */
  max: number;
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

/**
 * Where counters live. Both implementations (memory, Redis) give the same
 * answers for the same inputs; test/conformance proves it.
 */
export interface CounterStore {
  readonly kind: "memory" | "redis" | "redis-cluster";
  /** answers over a network: calls need a timeout and a circuit breaker (SPEC §9) */
  readonly remote: boolean;
  /** Atomic check-and-claim of every counter: all or nothing (SPEC §5). */
  claim(member: string, counters: readonly CounterSpec[]): Promise<ClaimOutcome>;
  state(): StoreState;
  onStateChange(listener: (state: StoreState) => void): () => void;
  close(): Promise<void>;
}
