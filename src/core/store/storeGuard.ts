import { StoreUnavailableError } from "../errors";
import { asStoreFailure, isStoreFault } from "./storeFaults";
import { roundTrip } from "../sendQueue/roundTrip";

export interface CircuitBreakerOptions {
  /** consecutive store faults that open the circuit */
  failureThreshold?: number;
  /** how long an open circuit refuses calls before one probe */
  coolDownMs?: number;
}

/**
 * After repeated store faults the circuit opens: calls fail at once for a
 * cool-down, then a single probe decides (SPEC §9). Only faults that say the
 * store is unwell count (storeFaults.ts); a msg's own bad input never does.
 */
export type CircuitState = "closed" | "open" | "half_open";

export class CircuitBreaker {
  /** how often the circuit opened (from closed, or again after a failed probe) */
  opens = 0;
  private consecutiveFaults = 0;
  private openUntil = 0;
  private probing = false;
  private readonly threshold: number;
  private readonly coolDownMs: number;

  constructor(options: CircuitBreakerOptions = {}) {
    this.threshold = options.failureThreshold ?? 3;
    this.coolDownMs = options.coolDownMs ?? 1000;
  }

  isOpen(): boolean {
    return this.consecutiveFaults >= this.threshold;
  }

  /** closed: calls go through; open: they fail at once; half_open: the cool-down is over, one probe decides. */
  state(now = Date.now()): CircuitState {
    if (this.consecutiveFaults < this.threshold) return "closed";
    return this.probing || now >= this.openUntil ? "half_open" : "open";
  }

  /** The half-open probe is out: until it settles, callers that can wait should (it alone decides the circuit). */
  get probeInFlight(): boolean {
    return this.probing;
  }

  /** The store says it is connected again: the next call need not wait out the cool-down. */
  reset(): void {
    this.consecutiveFaults = 0;
    this.openUntil = 0;
  }

  /** Throws while the circuit is open; returns true when this call is the half-open probe. */
  admit(): boolean {
    if (this.consecutiveFaults < this.threshold) return false;
    if (Date.now() < this.openUntil || this.probing) {
      throw new StoreUnavailableError("circuit_open", "circuit open after repeated failures");
    }
    this.probing = true;
    return true;
  }

  /** The outcome of an admitted call: answered, or failed with `err`. */
  settle(isProbe: boolean, err?: unknown): void {
    if (isProbe) this.probing = false;
    if (err === undefined || !isStoreFault(err)) {
      if (err === undefined) this.consecutiveFaults = 0;
      return;
    }
    this.consecutiveFaults++;
    if (this.consecutiveFaults >= this.threshold) {
      // faults of calls admitted before it opened extend the cool-down; they do not open it again
      if (isProbe || this.consecutiveFaults === this.threshold) this.opens++;
      this.openUntil = Date.now() + this.coolDownMs;
    }
  }
}

export interface StoreGuardOptions extends CircuitBreakerOptions {
  timeoutMs: number;
}

/** One call at a time under a timeout and a breaker: for admin work off the send path. */
export class StoreGuard {
  readonly breaker: CircuitBreaker;

  constructor(private readonly options: StoreGuardOptions) {
    this.breaker = new CircuitBreaker(options);
  }

  isOpen(): boolean {
    return this.breaker.isOpen();
  }

  async run<T>(call: () => Promise<T>): Promise<T> {
    const isProbe = this.breaker.admit();
    try {
      const result = await roundTrip(call(), this.options.timeoutMs);
      this.breaker.settle(isProbe);
      return result;
    } catch (err) {
      const failure = asStoreFailure(err);
      this.breaker.settle(isProbe, failure);
      throw failure;
    }
  }
}
