import { StoreUnavailableError } from "./errors";

export interface StoreGuardOptions {
  timeoutMs: number;
  /** consecutive failures that open the circuit */
  failureThreshold?: number;
  /** how long an open circuit refuses calls before one probe */
  coolDownMs?: number;
}

/**
 * Every store call gets a timeout; after repeated failures the circuit opens
 * and calls fail at once for a cool-down, then a single probe decides (SPEC §9).
 */
export class StoreGuard {
  private consecutiveFailures = 0;
  private openUntil = 0;
  private probing = false;
  private readonly threshold: number;
  private readonly coolDownMs: number;

  constructor(private readonly options: StoreGuardOptions) {
    this.threshold = options.failureThreshold ?? 3;
    this.coolDownMs = options.coolDownMs ?? 1000;
  }

  isOpen(): boolean {
    return this.consecutiveFailures >= this.threshold;
  }

  async run<T>(call: () => Promise<T>): Promise<T> {
    const isProbe = this.admit();
    try {
      const result = await withTimeout(call(), this.options.timeoutMs);
      this.consecutiveFailures = 0;
      return result;
    } catch (err) {
      this.consecutiveFailures++;
      if (this.consecutiveFailures >= this.threshold) this.openUntil = Date.now() + this.coolDownMs;
      throw err instanceof StoreUnavailableError
        ? err
        : new StoreUnavailableError("error", `store error: ${(err as Error).message}`, err);
    } finally {
      if (isProbe) this.probing = false;
    }
  }

  /** Throws while the circuit is open; returns true when this call is the half-open probe. */
  private admit(): boolean {
    if (this.consecutiveFailures < this.threshold) return false;
    if (Date.now() < this.openUntil || this.probing) {
      throw new StoreUnavailableError("circuit_open", "store circuit is open after repeated failures");
    }
    this.probing = true;
    return true;
  }
}

function withTimeout<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreUnavailableError("timeout", `store did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
