import { SendFieldError, StoreUnavailableError } from "../errors";

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
  // our own refusal of an item's arguments (or a msg's: one the queue cannot hold), not the store's doing
  if (err instanceof TypeError || err instanceof RangeError || err instanceof SyntaxError || err instanceof SendFieldError) return false;
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
  return new StoreUnavailableError("error", `error: ${message}`, err);
}

/**
 * A cluster's refusal of a call over several keys of a slot that is being
 * moved (some keys already on the new master): TRYAGAIN, or ioredis giving up
 * after its redirections. The call did not run.
 */
export function isMidMigration(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  if (message.includes("TRYAGAIN") || message.includes("Too many Cluster redirections")) return true;
  // a MULTI refused at queueing fails as EXECABORT, with the queued commands' refusals beside it
  const previous = (err as { previousErrors?: unknown } | null)?.previousErrors;
  return Array.isArray(previous) && previous.some((e) => isMidMigration(e));
}

/** waits between the tries of a call refused mid-move: about 1.3 s in all, within a hold's 2 s */
const MID_MOVE_WAITS_MS = [10, 20, 40, 80, 160, 320, 640];

/**
 * Runs a call over several keys of one slot (the defer queue's) again while a
 * cluster refuses it mid-move: the keys are on one master again once the
 * slot's move ends, usually within milliseconds. A refused call did not run,
 * so trying again neither holds nor acks anything twice.
 */
export async function retriedMidMove<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const wait = MID_MOVE_WAITS_MS[attempt];
      if (wait === undefined || !isMidMigration(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
