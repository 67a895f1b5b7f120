/**
 * Keeps the order a flow author sees: msgs of one key (one recipient) leave a
 * gate in the order they came in, even when a later one is answered first
 * (an earlier one still giving back claims, say). Only leaving waits: the
 * store work of every msg goes on at once. Nothing is allocated for a msg
 * with no msg of its key ahead of it, the common case.
 */
export class OutputOrder {
  /** per key, the last msg in line */
  private readonly tails = new Map<string, Place>();

  /** A msg's place in line; join it once its key is known, leave it when it is done. */
  place(): Place {
    return new Place(this.tails);
  }

  /** keys with msgs in line (for tests: it drains to 0) */
  get lines(): number {
    return this.tails.size;
  }
}

export class Place {
  private key: string | undefined;
  /** a msg of the same key ahead of this one has not left yet */
  private blocked = false;
  private held: (() => void)[] | undefined;
  private behind: Place | undefined;
  /** set once the msg is done while msgs ahead have not left: what it does last, at its turn */
  private leaving: (() => void) | undefined;
  private left = false;

  constructor(private readonly tails: Map<string, Place>) {}

  /** Takes the place behind the msgs of `key` already in line. */
  join(key: string): void {
    if (this.key !== undefined) return;
    this.key = key;
    const ahead = this.tails.get(key);
    this.tails.set(key, this);
    if (ahead && !ahead.left) {
      ahead.behind = this;
      this.blocked = true;
    }
  }

  /** a msg of the same key ahead of this one has not left yet: what it sends or does last waits for it */
  get waiting(): boolean {
    return this.blocked;
  }

  /** Runs an output now when it is this msg's turn, else once the msgs ahead have left. */
  emit(output: () => void): void {
    if (this.blocked) (this.held ??= []).push(output);
    else output();
  }

  /**
   * After the msg is done: at its turn (at once, or once the msgs ahead have
   * left, their outputs first) runs `last`, then lets the msgs behind go.
   * `last` is what must come before them: a msg that failed reaches Catch
   * (done(err)) before a later msg of its recipient leaves.
   */
  leave(last: () => void): void {
    if (this.blocked) {
      this.leaving = last;
      return;
    }
    try {
      last();
    } finally {
      this.depart();
    }
  }

  private unblock(): void {
    this.blocked = false;
    const held = this.held;
    this.held = undefined;
    held?.forEach((output) => output());
    const leaving = this.leaving;
    if (leaving) {
      this.leaving = undefined;
      this.leave(leaving);
    }
  }

  /** leave() for a msg not `waiting` that has done its last step itself (no function to hand over) */
  departNow(): void {
    this.depart();
  }

  private depart(): void {
    this.left = true;
    if (this.key !== undefined && this.tails.get(this.key) === this) this.tails.delete(this.key);
    this.behind?.unblock();
  }
}
