import { keepShape } from "./keptShapes";

/**
 * Keeps the order a flow author sees: msgs of one key (one recipient) leave a
 * gate in the order they came in, even when a later one is answered first
 * (an earlier one still giving back claims, say). Only leaving waits: the
 * store work of every msg goes on at once. Nothing is allocated for a msg
 * with no msg of its key ahead of it, the common case.
 */
export class OutputOrder {
  /** per group (an org), per key (a recipient), the last msg in line: two lookups, no key made of both per msg */
  private readonly tails = new Map<string, Map<string, Place>>();

  /** A msg's place in line; join it once its key is known, leave it when it is done. */
  place(): Place {
    return new Place(this.tails);
  }

  /** keys with msgs in line (for tests: it drains to 0) */
  get lines(): number {
    let n = 0;
    for (const line of this.tails.values()) n += line.size;
    return n;
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

  /** the lines of this msg's group, once it has joined */
  private line: Map<string, Place> | undefined;
  private group = "";

  constructor(private readonly tails: Map<string, Map<string, Place>>) {}

  /** Takes the place behind the msgs of `key` in `group` already in line. */
  join(group: string, key: string): void {
    if (this.key !== undefined) return;
    this.key = key;
    this.group = group;
    let line = this.tails.get(group);
    if (!line) this.tails.set(group, (line = new Map<string, Place>()));
    this.line = line;
    const ahead = line.get(key);
    line.set(key, this);
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
    const line = this.line;
    if (line !== undefined && line.get(this.key as string) === this) {
      line.delete(this.key as string);
      // groups come from msgs: an emptied one is not kept
      if (line.size === 0 && this.tails.get(this.group) === line) this.tails.delete(this.group);
    }
    this.behind?.unblock();
  }
}

keepShape(new Place(new Map()));
