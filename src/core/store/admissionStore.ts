import type { StoreUnavailableError } from "../errors";
import type { ClaimHistory } from "../history/claimHistory";
import type { QuotaOutcome, QuotaRequest } from "../caps/totals/quotaStep";

/**
 * One cap's counter: a field of the recipient's counter hash (SPEC §5). Every
 * cap of one recipient lives in one hash, so a claim reads and writes one key.
 */
export interface CounterSpec {
  /** `<cap>[:<per values>]`, encoded */
  field: string;
  /** rolling caps: the window; calendar caps: the current period's length */
  windowMs: number;
  /** effective max; 0 blocks every send */
  max: number;
  /** calendar caps: the current period (in the msg's zone): entries since startMs count, and all free at resetAt */
  startMs?: number;
  resetAt?: number;
  /** a shadow cap (SPEC §4 enforcement): judged with the others, never refuses, and a send it would refuse takes no slot in it */
  shadow?: boolean;
}

export interface CounterOutcome {
  /** entries in the window after the claim (or at the refusal) */
  count: number;
  /** this messageId already held a slot in the counter */
  alreadyHeld: boolean;
  /**
   * that slot was another attempt's (a copy of the msg still in flight, or one
   * that went out), and this admitted attempt now holds it too: the slot goes
   * only once every attempt holding it was given back
   */
  coHeld?: boolean;
  /** ms until this counter has a free slot; null when it is not full for this send, or never frees (max 0) */
  retryAfterMs: number | null;
  /** an enforced cap that refuses this send */
  blocking: boolean;
  /** a shadow cap that would have refused this send (and so holds no slot for it) */
  wouldRefuse: boolean;
}

export interface ClaimOutcome {
  allowed: boolean;
  /** the store's clock, ms since epoch */
  nowMs: number;
  counters: CounterOutcome[];
}

/** One send's claim: every counter of `key` at once, or none. */
export interface ClaimRequest {
  /** the recipient's counter hash */
  key: string;
  /** the messageId: a retry of it never takes a second slot */
  member: string;
  /** this attempt's token (1..65535): a give-back removes only what this very attempt added */
  token: number;
  counters: readonly CounterSpec[];
  /** when allowed, the history entry to add, the store's now before it (src/core/history/claimHistory.ts) */
  readonly history?: ClaimHistory;
}

/** record mode: count a send (or an impression event) without checking. */
export interface RecordRequest {
  key: string;
  member: string;
  counters: readonly CounterSpec[];
}

/** A claim to give back: a claim attempt's counter entries, or a duplicate-content mark. */
export type ReleaseRequest =
  | { kind: "cap"; key: string; member: string; token: number; fields: readonly string[] }
  /** `value`: the mark's as this attempt made it (markValue): a mark another attempt made is left alone */
  | { kind: "mark"; key: string; value: string };

/**
 * What a give-back did: `given`, the entries (or marks) this attempt held and
 * freed; `handed`, those another attempt of the same msg held too, handed to
 * it and left in place (that attempt's send goes on under the msg's slot).
 */
export interface ReleaseAnswer {
  given: number;
  handed: number;
}

/** Read-only: how full some counters of one recipient are (check mode, admin usage). */
export interface InspectRequest {
  key: string;
  counters: readonly CounterSpec[];
}

export interface CounterReading {
  count: number;
  /** ms until a slot frees; null when a slot is free now, or never frees (max 0) */
  retryAfterMs: number | null;
  full: boolean;
}

export type StoreState = "connecting" | "ready" | "down";

/** One msg against a throughput ceiling (lua/gcra.lua, src/core/throughput/gcra.ts). */
export interface ThroughputRequest {
  /** the ceiling's key (src/core/throughput/throughputKeys.ts) */
  key: string;
  /** T, whole µs */
  emissionUs: number;
  /** (burst − 1) × T, µs */
  toleranceUs: number;
  /** most wait a reservation may have, µs; 0 = skip mode */
  maxWaitUs: number;
}

/** Reservations to give back to a ceiling (its held msgs were dropped). */
export interface ThroughputRefund {
  key: string;
  emissionUs: number;
  toleranceUs: number;
  /** reservations given back: the latest one and the count - 1 before it, each T apart */
  count: number;
  /** the latest given-back reservation's instant, µs: when the ceiling reserved anything after it, nothing is given back */
  lastUs: number;
}

export interface ThroughputOutcome {
  /** reserved: it may leave `waitUs` from now */
  allowed: boolean;
  /** the store's clock, µs since epoch */
  nowUs: number;
  /** allowed: µs until its reserved instant (0 = now); refused: µs until it would conform */
  waitUs: number;
}

/** The block-list check and duplicate mark of one send (lua/suppression.lua). */
export interface SuppressionCheck {
  /** the recipient's block list: channel (or "*") -> entry JSON */
  listKey: string;
  channel: string;
  member: string;
  /** this attempt's, written into a mark it makes (markValue) */
  token: string;
  /** the duplicate-content mark; absent when duplicate suppression is off */
  markKey?: string;
  markWindowMs: number;
}

export type SuppressionOutcome =
  /**
   * mark: "new" made by this call; "held" already this member's (a retry) and
   * this attempt's own; "joined" another attempt's of this member (a copy of
   * the msg), which this attempt now holds too (the mark goes with the last
   * give-back); "none" not asked for
   */
  | { kind: "clear"; mark: "new" | "held" | "joined" | "none" }
  | { kind: "listed"; field: string; entry: string }
  | { kind: "duplicate"; firstMember: string; retryAfterMs: number };

/** One entry for a recipient's decision history (src/core/history), encoded (no newline). */
export interface HistoryAppend {
  key: string;
  entry: string;
}

/** One block-list entry as stored: under the recipient (hot path) and in the org's index (listing). */
export interface SuppressionWrite {
  listKey: string;
  field: string;
  indexKey: string;
  indexField: string;
  /** entry JSON; absent = remove */
  entry?: string;
}

/**
 * The answer to one item of a batch: its result, or the store failure that
 * kept it from being answered (on Redis Cluster one slot's call can fail while
 * the others are answered).
 */
export type Settled<T> = T | StoreUnavailableError;

/**
 * Told an item's answer (by its index in the call) as soon as it is read,
 * before the rest of the call is: a cluster's masters answer a call's slots
 * apart, and a slot's items must not wait for another master, where a later
 * call with none on it would overtake them; and answers read together are
 * told in the order they were sent, not in the order the promises that
 * gather whole calls happen to settle. Failures are not told early.
 */
export type EarlyAnswer<T> = (index: number, answer: T) => void;

/**
 * Where counters, block lists and duplicate marks live. Both implementations
 * (memory, Redis) give the same answers for the same inputs; test/conformance
 * proves it. Send-path calls take many items at once (a burst is answered in
 * a few round trips): items are applied in the order given, each atomically,
 * and answered in that order.
 */
export interface AdmissionStore {
  readonly kind: "memory" | "redis" | "redis-cluster";
  /** answers over a network: calls need the send queue, a timeout and a circuit breaker (SPEC §9) */
  readonly remote: boolean;
  /** how the send queue should feed it: most items in one call, most calls at once */
  readonly batching?: { maxBatch: number; maxInFlight: number };
  /** Atomic check-and-claim of each request's counters: all or nothing per request (SPEC §5). */
  claim(requests: readonly ClaimRequest[], early?: EarlyAnswer<ClaimOutcome>): Promise<Settled<ClaimOutcome>[]>;
  /** Adds each member to its counters without checking; idempotent. Answers the counts. */
  record(requests: readonly RecordRequest[], early?: EarlyAnswer<number[]>): Promise<Settled<number[]>[]>;
  /** Gives back claims; answers how many entries (or marks) each freed, and how many it handed to another attempt of its msg. */
  release(requests: readonly ReleaseRequest[], early?: EarlyAnswer<ReleaseAnswer>): Promise<Settled<ReleaseAnswer>[]>;
  checkSuppression(checks: readonly SuppressionCheck[], early?: EarlyAnswer<SuppressionOutcome>): Promise<Settled<SuppressionOutcome>[]>;
  /** GCRA reservations against throughput ceilings, in order, each atomic (SPEC §8). */
  throughput(requests: readonly ThroughputRequest[], early?: EarlyAnswer<ThroughputOutcome>): Promise<Settled<ThroughputOutcome>[]>;
  /** Gives back reservations: TAT = max(now, TAT − count × T); answers the TAT after, µs (0: the ceiling has no state). */
  throughputRefund(refunds: readonly ThroughputRefund[], early?: EarlyAnswer<number>): Promise<Settled<number>[]>;
  /** Calls on total caps' shared counters: spends, leases, give-backs (src/core/totals/quotaStep.ts, lua/quota.lua). */
  quota(requests: readonly QuotaRequest[], early?: EarlyAnswer<QuotaOutcome>): Promise<Settled<QuotaOutcome>[]>;
  /** Read-only: each counter's count in its window and the wait until it has a free slot; claims nothing. */
  inspect(requests: readonly InspectRequest[], early?: EarlyAnswer<CounterReading[]>): Promise<Settled<CounterReading[]>[]>;
  /** Writes (or, without entry, removes) block-list entries. */
  writeSuppressions(writes: readonly SuppressionWrite[]): Promise<void>;
  /** One page of an org's block-list index; cursor "0" starts and ends. */
  listSuppressions(indexKey: string, cursor: string, count: number): Promise<{ cursor: string; entries: string[] }>;
  /**
   * Adds entries, in order, to recipients' decision histories (lists, oldest
   * first; a key may come several times), each list living `ttlMs` from this
   * write and keeping at least its last `keep`. Answers each append: 1 when
   * written.
   */
  appendHistory(appends: readonly HistoryAppend[], keep: number, ttlMs: number): Promise<Settled<number>[]>;
  /** The last `keep` entries of one recipient's decision history, oldest first (empty: none, or expired). */
  readHistory(key: string, keep: number): Promise<string[]>;
  state(): StoreState;
  onStateChange(listener: (state: StoreState) => void): () => void;
  /**
   * A remote store that is not connected: settles once it is usable, or
   * rejects (not_ready) when its grace for the first connection (counted from
   * when it was opened) is over, at once when it is over or when the store
   * had connected and is down; undefined when it can take calls now. The
   * send queue waits on it before a call's timeout starts: waiting for the
   * first connection is not the call's round trip.
   */
  whenUsable?(): Promise<void> | undefined;
  /**
   * A remote store: when this process last read anything from it, on every
   * connection that owes an answer, on the wait clock (waitedMs; -Infinity:
   * never). A sent call is timed out only after the store said nothing for
   * the timeout while this process waited: one that answers the calls ahead
   * of it is busy, not unwell (SPEC §9). A cluster also times each master's
   * share of a call by that master alone.
   */
  heardAt?(): number;
  /**
   * The store's clock now, ms with fractions (Redis TIME): a throughput-gate
   * reads it once at start, while its loop is idle. Only a store of one clock
   * (not a cluster, whose masters each have their own).
   */
  clockMs?(): Promise<number>;
  close(): Promise<void>;
}
