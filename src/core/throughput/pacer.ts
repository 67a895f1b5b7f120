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
  private readonly heap: Entry<T>[] = [];
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  /** the dueAt the timer is set for */
  private armedFor = Number.POSITIVE_INFINITY;
  private stopped = false;

  constructor(private readonly onDue: (items: T[]) => void, private readonly now: () => number = Date.now) {}

  get size(): number {
    return this.heap.length;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Holds `item` until `dueAt` (epoch ms). Returns false once stopped: the caller keeps it. */
  add(dueAt: number, item: T): boolean {
    if (this.stopped) return false;
    this.push({ dueAt, seq: this.seq++, item });
    if (dueAt < this.armedFor) this.arm();
    return true;
  }

  /** Takes out the held items `pick` chooses (earliest first), whatever their instants. */
  take(pick: (item: T) => boolean): T[] {
    const taken: Entry<T>[] = [];
    const kept: Entry<T>[] = [];
    for (const entry of this.heap) (pick(entry.item) ? taken : kept).push(entry);
    if (taken.length === 0) return [];
    this.heap.length = 0;
    for (const entry of kept) this.push(entry);
    this.arm();
    return taken.sort((a, b) => (earlier(a, b) ? -1 : 1)).map((e) => e.item);
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
    while (this.heap.length > 0 && (this.heap[0] as Entry<T>).dueAt <= now) due.push((this.pop() as Entry<T>).item);
    this.arm();
    if (due.length > 0) this.onDue(due);
  }

  private arm(): void {
    this.disarm();
    const first = this.heap[0];
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

  private push(entry: Entry<T>): void {
    const heap = this.heap;
    let i = heap.push(entry) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!earlier(entry, heap[parent] as Entry<T>)) break;
      heap[i] = heap[parent] as Entry<T>;
      i = parent;
    }
    heap[i] = entry;
  }

  private pop(): Entry<T> | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && earlier(heap[right] as Entry<T>, heap[left] as Entry<T>) ? right : left;
      if (!earlier(heap[child] as Entry<T>, last)) break;
      heap[i] = heap[child] as Entry<T>;
      i = child;
    }
    heap[i] = last;
    return top;
  }
}
