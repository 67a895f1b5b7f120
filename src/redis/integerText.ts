/**
 * The integers of a script's answer given as one text, joined by commas
 * (claim.lua, record.lua and inspect.lua: lua/lib/counter_entries.lua
 * numbersText), read in order. The client decodes an array of integers with
 * objects of its own for each one; a text is one string, read here with no
 * string or object per number.
 */
export class IntegerText {
  private at = 0;

  private readonly text: string;

  /** `reply`: the script's answer, which must be a text */
  constructor(reply: unknown) {
    if (typeof reply !== "string") throw new Error(`a script answered ${typeof reply}, not a text of integers`);
    this.text = reply;
  }

  /** The next integer; an answer that has none there is an error, never a NaN. */
  next(): number {
    const text = this.text;
    let i = this.at;
    const negative = text.charCodeAt(i) === 45; // -
    if (negative) i++;
    const digits = i;
    let value = 0;
    for (let c = text.charCodeAt(i); c >= 48 && c <= 57; c = text.charCodeAt(++i)) value = value * 10 + (c - 48);
    if (i === digits || (i < text.length && text.charCodeAt(i) !== 44)) {
      throw new Error(`a script answered ${JSON.stringify(text.slice(0, 80))}: no integer at ${this.at}`);
    }
    this.at = i + 1;
    return negative ? -value : value;
  }
}
