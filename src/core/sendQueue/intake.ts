/** Where an intake counts the msgs waiting in it: its cap-config's send queue (maxQueued, and the length a gate's status shows). */
export interface Backlog {
  /** the queue holds maxQueued msgs, those waiting in intakes included: a new msg is refused as overloaded */
  full(): boolean;
  /** the msgs waiting in an intake went up or down by `delta` */
  waitingMsgs(delta: number): void;
}

/**
 * msgs a gate works on at once: two of the send queue's largest batches, so
 * one is gathered while the store answers the other. More only keeps more
 * state alive: on the bench's 100,000-msg burst 512 drained fastest (2,048 and
 * 128 were about a quarter slower; interleaved runs, the box's noise ±15 %).
 */
export const MAX_ACTIVE = 512;

/** the line lets go of the slots before its head once they are this many and half of it */
const COMPACT_AFTER = 4096;

/**
 * A gate's line of msgs not yet begun. A split node hands a gate its whole
 * burst in one tick; begun at once, every msg would keep its parsed send, its
 * claim, its promises and closures (about 4 KB) until the store answers it,
 * and the garbage collector would copy 100,000 of them at every scavenge (a
 * third of the drain time, 600 MB of heap). So at most `maxActive` msgs are
 * begun; the others wait as the runtime handed them (msg, send, done, three
 * slots of an array) and begin in arrival order as earlier ones finish.
 *
 * A msg that arrives while its cap-config's queue is full (`Backlog.full`)
 * begins at once, so the send queue refuses it as overloaded and the fail
 * mode decides, as SPEC §9 says: it does not wait behind the line.
 */
export class Intake<M, S, D> {
  /** msg, send, done of each waiting msg, flat */
  private line: (M | S | D | undefined)[] = [];
  private head = 0;
  private active = 0;

  constructor(
    private readonly begin: (msg: M, send: S, done: D) => void,
    private readonly backlog?: Backlog,
    private readonly maxActive = MAX_ACTIVE,
  ) {}

  /** msgs waiting to begin */
  get waiting(): number {
    return (this.line.length - this.head) / 3;
  }

  /** A msg has come in: begun now while fewer than maxActive are, or the queue is full; else it waits its turn. */
  enter(msg: M, send: S, done: D): void {
    if (this.active < this.maxActive || this.backlog?.full()) {
      this.active++;
      this.begin(msg, send, done);
      return;
    }
    this.line.push(msg, send, done);
    this.backlog?.waitingMsgs(1);
  }

  /** A begun msg is done: the next in line begins. */
  leave(): void {
    this.active--;
    while (this.active < this.maxActive && this.head < this.line.length) this.beginNext();
  }

  /** On close: every waiting msg begins now, as it would have without the line (none is lost). */
  flush(): void {
    while (this.head < this.line.length) this.beginNext();
  }

  private beginNext(): void {
    const at = this.head;
    const msg = this.line[at] as M;
    const send = this.line[at + 1] as S;
    const done = this.line[at + 2] as D;
    this.line[at] = this.line[at + 1] = this.line[at + 2] = undefined;
    this.head += 3;
    if (this.head === this.line.length) {
      this.line = [];
      this.head = 0;
    } else if (this.head > COMPACT_AFTER && this.head * 2 > this.line.length) {
      this.line = this.line.slice(this.head);
      this.head = 0;
    }
    this.active++;
    // counted out of the line before it begins: its own store call must not find the queue full because of itself
    this.backlog?.waitingMsgs(-1);
    this.begin(msg, send, done);
  }
}
