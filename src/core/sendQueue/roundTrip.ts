import { StoreUnavailableError } from "../errors";

/**
 * A sent store call under a timeout that measures the store, not this
 * process: when the timer fires, the reply may already be waiting in the
 * socket while the event loop was busy with other msgs (a burst). One
 * setImmediate lets the poll phase read it first; only a call still
 * unanswered after that has timed out.
 */
export function roundTrip<T>(call: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let settled = false;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      setImmediate(() => {
        if (!settled) reject(new StoreUnavailableError("timeout", `store did not answer within ${timeoutMs} ms`));
      });
    }, timeoutMs);
  });
  return Promise.race([call, timeout]).finally(() => {
    settled = true;
    clearTimeout(timer);
  });
}
