import { StoreUnavailableError } from "./errors";
import { FailOpenReporter } from "./failOpenReporter";
import { StoreGuard } from "./storeGuard";
import type { AdmissionStore } from "./stores/admissionStore";

export type FailMode = "open" | "closed";

/**
 * A cap-config's one way into its store: remote calls get the timeout and
 * circuit breaker; a failure either fails open (counted, warned with org and
 * channel) or is thrown for the msg to go to Catch (SPEC §9).
 */
export class StoreAccess {
  readonly guard: StoreGuard;
  /** block-list edits and listings: bulk work, off the send path, with a timeout of its own */
  private readonly adminGuard = new StoreGuard({ timeoutMs: 30_000 });
  readonly failOpen: FailOpenReporter;

  constructor(readonly store: AdmissionStore, readonly failMode: FailMode, timeoutMs: number, warn: (text: string) => void) {
    this.guard = new StoreGuard({ timeoutMs });
    this.failOpen = new FailOpenReporter(warn);
  }

  call<T>(work: (store: AdmissionStore) => Promise<T>): Promise<T> {
    return this.store.remote ? this.guard.run(() => work(this.store)) : work(this.store);
  }

  callAdmin<T>(work: (store: AdmissionStore) => Promise<T>): Promise<T> {
    return this.store.remote ? this.adminGuard.run(() => work(this.store)) : work(this.store);
  }

  /** For a send path: the store's answer, or the failure when the fail mode is open (thrown when closed). */
  async decide<T>(org: string, channel: string, work: (store: AdmissionStore) => Promise<T>): Promise<T | StoreUnavailableError> {
    try {
      return await this.call(work);
    } catch (err) {
      return this.failed(org, channel, err);
    }
  }

  /** Applies the fail mode to a failure on a send path (the store, or the rules it needs). */
  failed(org: string, channel: string, err: unknown): StoreUnavailableError {
    const failure = err instanceof StoreUnavailableError ? err : new StoreUnavailableError("error", (err as Error).message, err);
    if (this.failMode === "closed") throw failure;
    this.failOpen.report(org, channel, failure.message);
    return failure;
  }
}
