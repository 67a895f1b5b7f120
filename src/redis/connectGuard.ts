import type Redis from "ioredis";

/** how long a connection attempt may take before it is given up (ioredis's connectTimeout, which the store turns off) */
export const CONNECT_TIMEOUT_MS = 2000;

/**
 * Gives up a connection attempt of `redis` that has not connected
 * `timeoutMs` after it began, as ioredis's own connectTimeout would (the
 * stream destroyed with a `connect ETIMEDOUT` error, then closed, so the
 * client reconnects or ends as its retry strategy says), but only once this
 * process has read its sockets since the time ran out.
 *
 * ioredis times the attempt with the socket's timer, which fires in the
 * event loop's timers phase, before the poll phase that would read the
 * connect. A loop blocked longer than the timeout (a burst of a million msgs
 * handed to a gate in one tick) so failed attempts that had connected
 * meanwhile: a cluster's master connections ended before their first call,
 * and a whole batch of calls to them failed open. Here the check waits one
 * setImmediate, which runs after that poll phase.
 */
export function guardConnect(redis: Redis, timeoutMs = CONNECT_TIMEOUT_MS): void {
  let attempt = 0;
  redis.on("connecting", () => {
    const mine = ++attempt;
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (mine !== attempt || redis.status !== "connecting") return;
        const stream = redis.stream as { destroy(err: Error): void } | undefined;
        stream?.destroy(Object.assign(new Error("connect ETIMEDOUT"), { code: "ETIMEDOUT", errno: "ETIMEDOUT", syscall: "connect" }));
      });
    }, timeoutMs);
    // an attempt never keeps the process alive: ioredis's own timer does not either
    timer.unref();
  });
}
