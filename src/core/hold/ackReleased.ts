import type { DeferQueue } from "./heldQueue";

/**
 * Acks released msgs, trying again after a failure (an ack is idempotent)
 * with a wait that doubles from `firstWaitMs` up to 1 s, until the next try
 * would pass `giveUpAt()`. An ack lost to a connection reset must not release
 * the msgs again; past that point their lease ends anyway and they come back
 * (each with the same release_id). Resolves undefined once acked, else with
 * an Error that says so.
 */
export async function ackReleased(queue: DeferQueue, ids: readonly string[], giveUpAt: () => number, firstWaitMs = 50): Promise<Error | undefined> {
  let wait = firstWaitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      await queue.ack(ids);
      return undefined;
    } catch (err) {
      if (Date.now() + wait >= giveUpAt()) {
        return new Error(`could not ack ${ids.length} released msg(s) after ${attempt} attempt(s) (${(err as Error).message}): they come back when their lease ends, with the same release_id`);
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, 1000);
    }
  }
}
