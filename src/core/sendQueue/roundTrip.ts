import { StoreUnavailableError } from "../errors";
import { waitedMs } from "./waitClock";

/**
 * however busy, a call is failed this many timeouts after it was sent: a
 * store whose connection answers others but never this call (one that went
 * where it was not looked for, a slot that moved), or a dead one while this
 * process never waits, still gets a verdict. Counted between the timer's
 * checks, each gap at most two timeouts: a burst handed over in one tick
 * blocks the loop for seconds, during which no answer could be read. It
 * must stay above a call's honest wait behind the calls sent before it on a
 * busy box (every gate's lanes in flight on one master, the process busy
 * running their answers on), which a burst through four gates on a
 * 3-master cluster on two cores takes past a second
 */
const CEILING_TIMEOUTS = 60;

/**
 * A sent store call under a timeout that measures the store, not this
 * process nor the calls ahead of it: it fails once its connection has
 * delivered nothing for `timeoutMs` of this process's waiting since it was
 * sent. `heardWaited` says when the connection last delivered anything, on
 * the wait clock (waitedMs); without it the call's silence counts from when
 * it was sent, on the wall clock. A server that keeps answering the commands
 * sent before this one is alive and busy, and this call's answer comes after
 * theirs; one that is stalled or dead answers nothing while this process
 * waits for it, and fails it within `timeoutMs` of waiting.
 *
 * This process reads a socket only in the poll phase of its event loop, and
 * a busy loop makes that phase long: what arrives during it is read in the
 * next one. So silence counts only up to when the timer fired: the poll
 * phase that follows it (one setImmediate) starts later and reads everything
 * that arrived before.
 */
export function roundTrip<T>(call: Promise<T>, timeoutMs: number, heardWaited?: () => number): Promise<T> {
  const clock = heardWaited ? waitedMs : () => performance.now();
  const sentOn = clock();
  let timer: NodeJS.Timeout | undefined;
  let settled = false;
  /** time since the send towards the ceiling, and when it was last counted */
  let waited = 0;
  let countedAt = performance.now();
  const timeout = new Promise<never>((_, reject) => {
    const check = (): void => {
      const firedAt = performance.now();
      const firedOn = clock();
      waited += Math.min(firedAt - countedAt, 2 * timeoutMs);
      countedAt = firedAt;
      setImmediate(() => {
        if (settled) return;
        const quietSince = Math.max(sentOn, heardWaited?.() ?? sentOn);
        const silentMs = firedOn - quietSince;
        // a timer may fire a fraction of a ms early by this clock: that is no reason for another turn
        if (silentMs >= timeoutMs - 1) {
          reject(new StoreUnavailableError("timeout", `answered nothing for ${timeoutMs} ms`));
        } else if (waited >= timeoutMs * CEILING_TIMEOUTS) {
          reject(new StoreUnavailableError("timeout", `did not answer within ${timeoutMs * CEILING_TIMEOUTS} ms`));
        } else {
          // the silence reaches the timeout no sooner than this (the wait clock runs no faster than the wall clock)
          timer = setTimeout(check, Math.max(1, timeoutMs - silentMs));
        }
      });
    };
    timer = setTimeout(check, timeoutMs);
  });
  return Promise.race([call, timeout]).finally(() => {
    settled = true;
    clearTimeout(timer);
  });
}
