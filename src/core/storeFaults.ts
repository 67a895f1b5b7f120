import { StoreUnavailableError } from "./errors";

/** Redis replies that say the server itself is unwell (not that one call was wrong). */
const UNWELL_REPLIES = /^(LOADING|BUSY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|OOM|READONLY|NOREPLICAS|MISCONF)\b/;

function isReplyError(err: unknown): boolean {
  return err instanceof Error && err.name === "ReplyError";
}

/**
 * Does this failure say the store is unwell? Only those count towards the
 * circuit breaker (SPEC §9): a sent call that timed out, a lost or refused
 * connection, a server that is loading, busy or out of memory. A script
 * error or a refusal of one call's arguments is that call's problem.
 */
export function isStoreFault(err: unknown): boolean {
  if (err instanceof StoreUnavailableError) {
    if (err.kind === "timeout" || err.kind === "not_ready") return true;
    if (err.kind !== "error") return false;
    return err.cause === undefined || isStoreFault(err.cause);
  }
  if (isReplyError(err)) return UNWELL_REPLIES.test((err as Error).message);
  // our own refusal of an item's arguments, not the store's doing
  if (err instanceof TypeError || err instanceof RangeError || err instanceof SyntaxError) return false;
  return true;
}

/** Whether a failed store call may still have been applied: it was sent (not refused before by the breaker, the queue bound or a store not ready). */
export function mayHaveLanded(error: StoreUnavailableError): boolean {
  return error.kind === "timeout" || error.kind === "error";
}

/** Any failure of a store call as the error a send path understands. */
export function asStoreFailure(err: unknown): StoreUnavailableError {
  if (err instanceof StoreUnavailableError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new StoreUnavailableError("error", `store error: ${message}`, err);
}
