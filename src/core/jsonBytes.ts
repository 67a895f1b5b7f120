/** bytes a JsonBytes starts with: a state file's write gathers about this much */
const FIRST_BYTES = 1 << 18;

/** how deep `value` writes nested data itself */
const MAX_DEPTH = 64;
const HEX = "0123456789abcdef";
// eslint-disable-next-line @typescript-eslint/unbound-method -- called with the object it asks about
const hasOwn = Object.prototype.hasOwnProperty;

/** Writes the escape of control character (or lone surrogate) `code` at `at`, as JSON.stringify does; answers where it ends. */
function escaped(buffer: Buffer, at: number, code: number): number {
  const short = code === 0x08 ? 0x62 : code === 0x09 ? 0x74 : code === 0x0a ? 0x6e : code === 0x0c ? 0x66 : code === 0x0d ? 0x72 : 0;
  buffer[at++] = 0x5c;
  if (short !== 0) {
    buffer[at++] = short;
    return at;
  }
  buffer[at++] = 0x75;
  for (let shift = 12; shift >= 0; shift -= 4) buffer[at++] = HEX.charCodeAt((code >> shift) & 0xf);
  return at;
}

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

  /** `value` as JSON.stringify writes a string (quoted, escaped where JSON must), in UTF-8. */
  string(value: string): void {
    this.room(value.length + 2);
    let buffer = this.buffer;
    let at = this.at;
    buffer[at++] = 0x22;
    let roomy = false;
    for (let i = 0; i < value.length; i++) {
      const code = value.charCodeAt(i);
      if (code >= 0x20 && code < 0x7f && code !== 0x22 && code !== 0x5c) {
        buffer[at++] = code;
        continue;
      }
      if (!roomy) {
        // from here on a code unit may take up to 6 bytes (an escape), and the closing quote 1
        this.at = at;
        this.room(6 * (value.length - i) + 1);
        buffer = this.buffer;
        roomy = true;
      }
      if (code === 0x22 || code === 0x5c) {
        buffer[at++] = 0x5c;
        buffer[at++] = code;
      } else if (code < 0x20) {
        at = escaped(buffer, at, code);
      } else if (code < 0x80) {
        buffer[at++] = code;
      } else if (code < 0x800) {
        buffer[at++] = 0xc0 | (code >> 6);
        buffer[at++] = 0x80 | (code & 0x3f);
      } else if (code >= 0xd800 && code <= 0xdfff) {
        const next = i + 1 < value.length ? value.charCodeAt(i + 1) : 0;
        if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          const point = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
          buffer[at++] = 0xf0 | (point >> 18);
          buffer[at++] = 0x80 | ((point >> 12) & 0x3f);
          buffer[at++] = 0x80 | ((point >> 6) & 0x3f);
          buffer[at++] = 0x80 | (point & 0x3f);
          i++;
        } else {
          // a lone surrogate: JSON.stringify writes it as an escape, which UTF-8 could not hold
          at = escaped(buffer, at, code);
        }
      } else {
        buffer[at++] = 0xe0 | (code >> 12);
        buffer[at++] = 0x80 | ((code >> 6) & 0x3f);
        buffer[at++] = 0x80 | (code & 0x3f);
      }
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

  /**
   * `value` as JSON.stringify writes it. Plain data (strings, numbers,
   * booleans, null, arrays, objects of no class and no toJSON) is written
   * here, the rest (a Date, a class, a cycle or a BigInt, which throw) goes
   * through JSON.stringify itself.
   */
  value(value: unknown, depth = 0): void {
    switch (typeof value) {
      case "string":
        this.string(value);
        return;
      case "number":
        this.number(value);
        return;
      case "boolean":
        this.raw(value ? "true" : "false");
        return;
      case "object":
        break;
      default:
        this.json(value);
        return;
    }
    if (value === null) {
      this.raw("null");
      return;
    }
    // past this depth a cycle is likelier than data: JSON.stringify tells it
    if (depth >= MAX_DEPTH) {
      this.json(value);
      return;
    }
    if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
      this.json(value);
      return;
    }
    if (Array.isArray(value)) {
      this.raw("[");
      for (let i = 0; i < value.length; i++) {
        if (i > 0) this.raw(",");
        const item: unknown = value[i];
        if (item === undefined || typeof item === "function" || typeof item === "symbol") this.raw("null");
        else this.value(item, depth + 1);
      }
      this.raw("]");
      return;
    }
    const prototype: unknown = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      this.json(value);
      return;
    }
    this.raw("{");
    let first = true;
    // for-in takes the keys in Object.keys' order without making their array; what it finds up the prototype is left out
    for (const key in value) {
      if (!hasOwn.call(value, key)) continue;
      const field: unknown = (value as Record<string, unknown>)[key];
      if (field === undefined || typeof field === "function" || typeof field === "symbol") continue;
      if (!first) this.raw(",");
      first = false;
      this.string(key);
      this.raw(":");
      this.value(field, depth + 1);
    }
    this.raw("}");
  }

  /** Any value, through JSON.stringify itself (what it leaves out, alone, as null). */
  json(value: unknown): void {
    const text = JSON.stringify(value) as string | undefined;
    this.utf8(text ?? "null");
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
