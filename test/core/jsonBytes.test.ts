import assert from "node:assert/strict";
import { JsonBytes } from "../../src/core/jsonBytes";

/** What `write` puts into a fresh JsonBytes of `firstBytes`, as text. */
function written(write: (out: JsonBytes) => void, firstBytes = 4): string {
  const out = new JsonBytes(firstBytes);
  write(out);
  return out.text();
}

describe("JsonBytes: JSON text written straight into bytes", () => {
  it("writes a number as JSON.stringify does: whole numbers up to 2 ** 53 by their digits, and every other kind", () => {
    const numbers = [0, -0, 1, 9, 10, 99, 100, 65535, 0xffffffff, 1_796_512_138_507, 10 ** 15, 10 ** 15 - 1, Number.MAX_SAFE_INTEGER, 2 ** 53, 1e21, -1, -1_796_512_138_507, 0.5, 1.25e-7, Number.NaN, Number.POSITIVE_INFINITY];
    for (const n of numbers) assert.equal(written((out) => out.number(n)), JSON.stringify(n), `${n}`);
    // every count of digits, each at its largest and smallest
    for (let digits = 1; digits <= 16; digits++) {
      for (const n of [10 ** (digits - 1), 10 ** digits - 1]) {
        if (n <= Number.MAX_SAFE_INTEGER) assert.equal(written((out) => out.number(n)), JSON.stringify(n), `${n}`);
      }
    }
  });

  it("writes a string as JSON.stringify does: quotes, backslashes, control characters, non-ASCII and lone surrogates", () => {
    const strings = ["", "fc:{default|%2b1555}:c", 'a"b', "a\\b", "line\nnext", "\u0000\u001f\u007f", "café", "✉️ 📱", "\ud800", "x\udc00y"];
    for (const s of strings) {
      const text = written((out) => out.string(s));
      assert.equal(text, JSON.stringify(s), JSON.stringify(s));
      assert.equal(JSON.parse(text), s);
    }
  });

  it("grows past its first bytes without losing what it wrote, and clear starts again at the first byte", () => {
    const out = new JsonBytes(8);
    const value = { key: "é".repeat(100), n: [1, 2, 3] };
    out.raw("[");
    for (let i = 0; i < 50; i++) {
      if (i > 0) out.raw(",");
      out.number(i * 1_000_000_007);
      out.raw(",");
      out.string(`r${i}"`);
      out.raw(",");
      out.json(value);
    }
    out.raw("]");
    const expected = JSON.stringify(Array.from({ length: 50 }, (_, i) => [i * 1_000_000_007, `r${i}"`, value]).flat());
    assert.equal(out.text(), expected);
    assert.equal(out.length, Buffer.byteLength(expected));
    assert.equal(out.bytes().toString("utf8"), expected);
    out.clear();
    assert.equal(out.length, 0);
    out.raw("{}");
    assert.equal(out.text(), "{}");
  });
});
