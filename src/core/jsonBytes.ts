/** bytes a JsonBytes starts with: a state file's write gathers about this much */
const FIRST_BYTES = 1 << 18;

/**
 * JSON text written straight into bytes, for the memory store's saves and its
 * defer journal. Made as strings, a save allocates several times its own size
 * in short-lived strings (pieces, joins, the encoding for the file), and the
 * text not yet written is copied by every young-generation collection it
 * lives through: at a million recipients those collections are the save's
 * stalls. Written here, a recipient's text makes no object beyond the rare
 * number or key that needs its general form, and the bytes live outside the
 * heap.
 */
export class JsonBytes {
  private buffer: Buffer;
  private at = 0;

  constructor(firstBytes = FIRST_BYTES) {
    this.buffer = Buffer.allocUnsafeSlow(firstBytes);
  }

  /** how many bytes are written */
  get length(): number {
    return this.at;
  }

  /** how many bytes it holds before it must grow */
  get capacity(): number {
    return this.buffer.length;
  }

  /** The bytes written so far, as a view: valid until the next write or clear. */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.at);
  }

  /** Starts again at the first byte, keeping the room. */
  clear(): void {
    this.at = 0;
  }

  /** The text written so far. */
  text(): string {
    return this.buffer.toString("utf8", 0, this.at);
  }

  /** `ascii` as it is: JSON punctuation and names the caller knows to be ASCII. */
  raw(ascii: string): void {
    this.room(ascii.length);
    const buffer = this.buffer;
    let at = this.at;
    for (let i = 0; i < ascii.length; i++) buffer[at++] = ascii.charCodeAt(i);
    this.at = at;
  }

  /** `value` as a JSON string, quoted (and escaped where it must be). */
  string(value: string): void {
    this.room(value.length + 2);
    const buffer = this.buffer;
    let at = this.at;
    buffer[at++] = 0x22;
    for (let i = 0; i < value.length; i++) {
      const code = value.charCodeAt(i);
      // a quote, a backslash, a control character or any non-ASCII: JSON.stringify's own escaping, in UTF-8
      if (code < 0x20 || code >= 0x7f || code === 0x22 || code === 0x5c) {
        this.utf8(JSON.stringify(value));
        return;
      }
      buffer[at++] = code;
    }
    buffer[at++] = 0x22;
    this.at = at;
  }

  /** `value` as JSON.stringify writes it. */
  number(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0) {
      this.raw(JSON.stringify(value));
      return;
    }
    let digits = 1;
    for (let power = 10; power <= value; power *= 10) digits++;
    this.room(digits);
    const buffer = this.buffer;
    // from the last digit back: below 2 ** 53 each division by 10 floors exactly
    let at = this.at + digits;
    this.at = at;
    let left = value;
    do {
      const rest = Math.floor(left / 10);
      buffer[--at] = 0x30 + (left - 10 * rest);
      left = rest;
    } while (left > 0);
  }

  /** Any value, through JSON.stringify: the rarer kinds of entry. */
  json(value: unknown): void {
    this.utf8(JSON.stringify(value));
  }

  private utf8(text: string): void {
    this.room(3 * text.length);
    this.at += this.buffer.write(text, this.at, "utf8");
  }

  /** Room for `bytes` more: a buffer twice as large (at least) when it is short. */
  private room(bytes: number): void {
    if (this.at + bytes <= this.buffer.length) return;
    const larger = Buffer.allocUnsafeSlow(Math.max(2 * this.buffer.length, this.at + bytes));
    this.buffer.copy(larger, 0, 0, this.at);
    this.buffer = larger;
  }
}
