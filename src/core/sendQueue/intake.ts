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
 * one is gathered while the store answers the other; more only keeps more
 * state alive (bench/README.md has the burst runs that chose it).
 */
export const MAX_ACTIVE = 512;

/** slots a waiting msg takes in the line: msg, done, refused */
const SLOTS = 3;

/**
 * A gate's line of msgs not yet begun. A split node hands a gate its whole
 * burst in one tick; begun at once, every msg would keep its parsed send, its
 * claim, its promises and closures until the store answers it, and the
 * garbage collector would copy 100,000 of them at every scavenge. So at most
 * `maxActive` msgs are begun; the others wait as the runtime handed them
 * (msg and done: slots of an array; the runtime's send is the node's own)
 * and begin in arrival order as earlier ones finish.
 *
 * A msg never begins inside the call that brought it in, but a microtask
 * later: what the runtime does in the same synchronous stretch (a deploy's
 * stop loop, which may stop the nodes after this gate) happens before the
 * gate judges or sends anything, so the gate's close sees the msg waiting and
 * the nodes after it already stopped.
 *
 * A msg that arrives while its cap-config's queue is full (`Backlog.full`)
 * is refused: it takes its place in the line like any other (so it never
 * overtakes its recipient's earlier msgs) but counts for nothing in the
 * queue, and in its turn it begins with its store calls refused as
 * overloaded (the cap-config's overload mode decides).
 */
export class Intake<M, D> {
  /** msg, done, refused of each waiting msg, flat */
  private readonly line = new SlotLine<M | D | boolean>();
  private active = 0;
  private scheduled = false;
  private whenIdle: (() => void)[] = [];
  /** begins what may begin now: run on the microtask after a msg came in */
  private readonly drain = (): void => {
    this.scheduled = false;
    while (this.active < this.maxActive && this.line.length > 0) this.beginNext();
  };

  constructor(
    private readonly begin: (msg: M, done: D) => void,
    private readonly backlog?: Backlog,
    private readonly maxActive = MAX_ACTIVE,
  ) {}

  /** msgs waiting to begin */
  get waiting(): number {
    return this.line.length / SLOTS;
  }

  /** A msg has come in: it waits its turn, which comes on the next microtask while fewer than maxActive are begun. */
  enter(msg: M, done: D): void {
    const refused = this.backlog?.full() === true;
    this.line.push(msg);
    this.line.push(done);
    this.line.push(refused);
    if (refused) this.backlog?.overflowed();
    else this.backlog?.waitingMsgs(1);
    if (!this.scheduled && this.active < this.maxActive) {
      this.scheduled = true;
      queueMicrotask(this.drain);
    }
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
    const done = line.shift() as D;
    const refused = line.shift() === true;
    this.active++;
    if (refused && this.backlog) {
      this.backlog.refusing(() => this.begin(msg, done));
      return;
    }
    // counted out of the line before it begins: its own store call must not find the queue full because of itself
    this.backlog?.waitingMsgs(-1);
    this.begin(msg, done);
  }
}
