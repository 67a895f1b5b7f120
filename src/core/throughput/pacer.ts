import { MinHeap } from "../minHeap";
import { preciseNow } from "./storeClock";

interface Entry<T> {
  dueAt: number;
  /** arrival order: items due at the same ms leave in the order they were added */
  seq: number;
  item: T;
}

function earlier<T>(a: Entry<T>, b: Entry<T>): boolean {
  return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.seq < b.seq);
}

/**
 * Releases items at their instants by one local timer: what a throughput-gate
 * holds itself is handed to `onDue` at its reserved ms (never before it, by
 * `now`), the items due together in one call, earliest first. A min-heap, so
 * adding and releasing cost O(log n) however many are held.
 */
export class Pacer<T> {
  private readonly heap = new MinHeap<Entry<T>>(earlier);
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  /** the dueAt the timer is set for */
  private armedFor = Number.POSITIVE_INFINITY;
  private stopped = false;

  /** `now`: the clock the instants are on (a StoreClock's local clock, preciseNow) */
  constructor(private readonly onDue: (items: T[]) => void, private readonly now: () => number = preciseNow) {}

  get size(): number {
    return this.heap.size;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Holds `item` until `dueAt` (epoch ms). Returns false once stopped: the caller keeps it. */
  add(dueAt: number, item: T): boolean {
    if (this.stopped) return false;
    this.heap.push({ dueAt, seq: this.seq++, item });
    if (dueAt < this.armedFor) this.arm();
    return true;
  }

  /** Takes out the held items `pick` chooses (earliest first), whatever their instants. */
  take(pick: (item: T) => boolean): T[] {
    const taken: Entry<T>[] = [];
    const kept: Entry<T>[] = [];
    for (const entry of this.heap.values()) (pick(entry.item) ? taken : kept).push(entry);
    if (taken.length === 0) return [];
    this.heap.clear();
    for (const entry of kept) this.heap.push(entry);
    this.arm();
    return taken.sort((a, b) => (earlier(a, b) ? -1 : 1)).map((e) => e.item);
  }

  /**
   * Releases the items already due, without waiting for the timer: a gate
   * calls it as it takes in each msg, since its timer cannot fire while the
   * loop is busy with a long run of incoming msgs (a 2 ms run of 20 msgs at
   * 10,000/s, a burst), and the items due in that run would leave after it.
   */
  releaseDue(): void {
    if (this.stopped || (this.heap.peek()?.dueAt ?? Number.POSITIVE_INFINITY) > this.now()) return;
    this.disarm();
    this.fire();
  }

  /** Stops the timer and hands back every held item, earliest first; add() refuses from now on. */
  stop(): T[] {
    this.stopped = true;
    this.disarm();
    return this.take(() => true);
  }

  private fire(): void {
    this.timer = undefined;
    this.immediate = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = this.now();
    const due: T[] = [];
    while ((this.heap.peek()?.dueAt ?? Number.POSITIVE_INFINITY) <= now) due.push((this.heap.pop() as Entry<T>).item);
    this.arm();
    if (due.length > 0) this.onDue(due);
  }

  private arm(): void {
    this.disarm();
    const first = this.heap.peek();
    if (!first || this.stopped) return;
    this.armedFor = first.dueAt;
    const wait = first.dueAt - this.now();
    // a timer can fire a little early (its clock is the loop's, read before the loop's work): fire() re-arms then
    if (wait <= 0) this.immediate = setImmediate(() => this.fire());
    else this.timer = setTimeout(() => this.fire(), wait);
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
  }
}
