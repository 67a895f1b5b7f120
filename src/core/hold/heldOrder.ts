/** The map is swept of recipients whose last held msg is due already once it doubled since the last sweep (from this size). */
const FIRST_SWEEP = 10_000;
/** Past this many recipients still holding msgs, the longest-known are forgotten (their order is no longer kept). */
const MOST_KEPT = 1_000_000;

/**
 * Keeps the held msgs of one recipient in the order they came in. The queue
 * hands msgs out by due time, and msgs due in the same ms by id (a hash), in
 * batches: a recipient's msgs held for one slot, or for the end of one quiet
 * window, were due in the same ms and left in a random order, also split over
 * two batches. Each msg of a recipient held while an earlier one is still held
 * is due at least 1 ms after it. One gate, one process: what arrives at two
 * instances has no order between them.
 */
export class HeldOrder {
  /** recipient (org and token) -> the due time its last held msg got, oldest first */
  private readonly lastDue = new Map<string, number>();
  private sweepAt = FIRST_SWEEP;

  /** `dueAt`, or 1 ms after the recipient's last held msg when that is not earlier; never past `latest` (nor before `dueAt`). */
  dueAfter(org: string, recipientToken: string, dueAt: number, latest: number, now: number): number {
    const key = `${org}\u0000${recipientToken}`;
    const last = this.lastDue.get(key);
    const due = last !== undefined && last >= dueAt ? Math.min(last + 1, Math.max(dueAt, latest)) : dueAt;
    this.lastDue.delete(key);
    this.lastDue.set(key, due);
    if (this.lastDue.size >= this.sweepAt) this.sweep(now);
    return due;
  }

  get size(): number {
    return this.lastDue.size;
  }

  private sweep(now: number): void {
    for (const [key, due] of this.lastDue) if (due < now) this.lastDue.delete(key);
    for (const key of this.lastDue.keys()) {
      if (this.lastDue.size <= MOST_KEPT) break;
      this.lastDue.delete(key);
    }
    this.sweepAt = Math.max(FIRST_SWEEP, 2 * this.lastDue.size);
  }
}
