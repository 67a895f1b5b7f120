import { SlotLine } from "./slotLine";

/** Where an intake counts the msgs waiting in it: its cap-config's send queue (maxQueued, and the length a gate's status shows). */
export interface Backlog {
  /** the queue holds maxQueued msgs, those waiting in intakes included: a new msg is refused as overloaded */
  full(): boolean;
  /** the msgs waiting in an intake went up or down by `delta` */
  waitingMsgs(delta: number): void;
  /** a msg was refused at the door (the queue was full): an overload episode, warned of once; its refusal in its turn warns of nothing more */
  overflowed(): void;
  /** runs `begin` with every bounded call it makes at once refused as overloaded */
  refusing(begin: () => void): void;
}

/**
 * msgs a gate works on at once: two of the send queue's largest batches, so
 * one is gathered while the store answers the other. More only keeps more
 * state alive: on the bench's 100,000-msg burst 512 drained fastest (2,048 and
 * 128 were about a quarter slower; interleaved runs, the box's noise ±15 %).
 */
export const MAX_ACTIVE = 512;

/** slots a waiting msg takes in the line: msg, send, done, refused */
const SLOTS = 4;

/**
 * A gate's line of msgs not yet begun. A split node hands a gate its whole
 * burst in one tick; begun at once, every msg would keep its parsed send, its
 * claim, its promises and closures (about 4 KB) until the store answers it,
 * and the garbage collector would copy 100,000 of them at every scavenge (a
 * third of the drain time, 600 MB of heap). So at most `maxActive` msgs are
 * begun; the others wait as the runtime handed them (msg, send, done: slots
 * of an array) and begin in arrival order as earlier ones finish.
 *
 * A msg that arrives while its cap-config's queue is full (`Backlog.full`)
 * is refused: it takes its place in the line like any other (so it never
 * overtakes its recipient's earlier msgs) but counts for nothing in the
 * queue, and in its turn it begins with its store calls refused as
 * overloaded, so the fail mode decides (SPEC §9). A gate that reaches the
 * store only after an await (a JSONata field) judges such a msg normally.
 */
export class Intake<M, S, D> {
  /** msg, send, done, refused of each waiting msg, flat */
  private readonly line = new SlotLine<M | S | D | boolean>();
  private active = 0;
  private whenIdle: (() => void)[] = [];

  constructor(
    private readonly begin: (msg: M, send: S, done: D) => void,
    private readonly backlog?: Backlog,
    private readonly maxActive = MAX_ACTIVE,
  ) {}

  /** msgs waiting to begin */
  get waiting(): number {
    return this.line.length / SLOTS;
  }

  /** A msg has come in: begun now while fewer than maxActive are (nobody waits then), else it waits its turn. */
  enter(msg: M, send: S, done: D): void {
    if (this.active < this.maxActive) {
      this.active++;
      // begun now: a full queue refuses its store calls by itself
      this.begin(msg, send, done);
      return;
    }
    const refused = this.backlog?.full() === true;
    this.line.push(msg);
    this.line.push(send);
    this.line.push(done);
    this.line.push(refused);
    if (refused) this.backlog?.overflowed();
    else this.backlog?.waitingMsgs(1);
  }

  /** A begun msg is done: the next in line begins. */
  leave(): void {
    this.active--;
    while (this.active < this.maxActive && this.line.length > 0) this.beginNext();
    if (this.whenIdle.length > 0 && this.isIdle) for (const resolve of this.whenIdle.splice(0)) resolve();
  }

  /** Resolves once every msg that came in has begun and is done (a closing gate lets its last msgs finish). */
  idle(): Promise<void> {
    if (this.isIdle) return Promise.resolve();
    return new Promise((resolve) => this.whenIdle.push(resolve));
  }

  private get isIdle(): boolean {
    return this.active === 0 && this.line.length === 0;
  }

  /** On close: every waiting msg begins now, as it would have without the line (none is lost). */
  flush(): void {
    while (this.line.length > 0) this.beginNext();
  }

  private beginNext(): void {
    const line = this.line;
    const msg = line.shift() as M;
    const send = line.shift() as S;
    const done = line.shift() as D;
    const refused = line.shift() === true;
    this.active++;
    if (refused && this.backlog) {
      this.backlog.refusing(() => this.begin(msg, send, done));
      return;
    }
    // counted out of the line before it begins: its own store call must not find the queue full because of itself
    this.backlog?.waitingMsgs(-1);
    this.begin(msg, send, done);
  }
}
