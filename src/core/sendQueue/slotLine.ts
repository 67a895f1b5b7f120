/** slots in one chunk of a line: a few KB, so a burst's line grows without copying what it holds */
const CHUNK_SLOTS = 1024;

/**
 * A first-in first-out line of slots, kept in fixed-size chunks: pushing
 * never copies what is already in line (a burst's line grows to hundreds of
 * thousands of slots), and a chunk is let go as soon as its last slot is
 * taken.
 */
export class SlotLine<T> {
  private readonly chunks: (T | undefined)[][] = [];
  /** the next slot to take, in chunks[0] */
  private head = 0;
  /** the next free slot, in the last chunk */
  private tail = CHUNK_SLOTS;
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(value: T): void {
    if (this.tail === CHUNK_SLOTS) {
      this.chunks.push(new Array<T | undefined>(CHUNK_SLOTS));
      this.tail = 0;
    }
    this.chunks[this.chunks.length - 1][this.tail++] = value;
    this.count++;
  }

  /** Takes the first slot; the line must not be empty. */
  shift(): T {
    const chunk = this.chunks[0];
    const value = chunk[this.head] as T;
    chunk[this.head++] = undefined;
    this.count--;
    if (this.head === CHUNK_SLOTS || this.count === 0) {
      // an emptied line starts over in a new chunk
      if (this.count === 0) {
        this.chunks.length = 0;
        this.tail = CHUNK_SLOTS;
      } else {
        this.chunks.shift();
      }
      this.head = 0;
    }
    return value;
  }
}
