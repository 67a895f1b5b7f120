/**
 * Keeps the order a flow author sees: msgs of one key (one recipient) leave a
 * gate in the order they came in, even when a later one is answered first
 * (an earlier one still giving back claims, say). Only leaving waits: the
 * store work of every msg goes on at once.
 */
export class OutputOrder {
  /** per key, when the last msg in line has left */
  private readonly tails = new Map<string, Promise<void>>();

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
  private ahead: Promise<void> | undefined;
  private turn = true;
  private held: (() => void)[] = [];
  private release: (() => void) | undefined;
  private mine: Promise<void> | undefined;

  constructor(private readonly tails: Map<string, Promise<void>>) {}

  /** Takes the place behind the msgs of `key` already in line. */
  join(key: string): void {
    if (this.key !== undefined) return;
    this.key = key;
    this.ahead = this.tails.get(key);
    this.mine = new Promise<void>((resolve) => { this.release = resolve; });
    this.tails.set(key, this.mine);
    if (this.ahead) {
      this.turn = false;
      void this.ahead.then(() => { this.turn = true; });
    }
  }

  /** Runs an output now when it is this msg's turn, else once the msgs ahead have left. */
  emit(output: () => void): void {
    if (this.turn && this.held.length === 0) output();
    else this.held.push(output);
  }

  /** After the msg is done: waits for the msgs ahead, lets out what it held, and lets the next one go. */
  async leave(): Promise<void> {
    if (this.ahead) await this.ahead;
    const held = this.held;
    this.held = [];
    for (const output of held) output();
    this.release?.();
    if (this.key !== undefined && this.tails.get(this.key) === this.mine) this.tails.delete(this.key);
  }
}
