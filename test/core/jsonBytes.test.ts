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
    const strings = [
      "", "fc:{default|%2b1555}:c", 'a"b', "a\\b", "line\nnext", "\b\t\n\f\r", "\u0000\u001f\u007f\u0080", "café", "✉️ 📱", "\u07ff\u0800\uffff",
      "\ud800", "x\udc00y", "\udbff\udfff", "\ud800\ud800\udc00", "\udc00\ud800", `{"msg":"${"é".repeat(300)}\\n"}`,
    ];
    for (const s of strings) {
      const text = written((out) => out.string(s));
      assert.equal(text, JSON.stringify(s), JSON.stringify(s));
      assert.equal(JSON.parse(text), s);
    }
  });

  it("writes a string escaped past its first bytes: the room an escape needs is made as it is met", () => {
    const s = `${"a".repeat(10)}${'"\n\u0001é📱'.repeat(50)}`;
    assert.equal(written((out) => out.string(s), 12), JSON.stringify(s));
  });

  it("writes plain data as JSON.stringify does, and hands the rest to it: a Date, a class, a toJSON, what it leaves out", () => {
    class Point {
      constructor(readonly x: number) {}
    }
    const values: unknown[] = [
      null, true, false, 0, "s", [], {}, [1, "two", null, [3, [4]], { five: 5 }],
      { op: "state", id: "h1", stored: '{"recipient":"+1555","payload":"x\ny"}', releaseAt: 1_796_512_138_507, merged: ['{"n":1}'], units: [], dropped: 0 },
      { gone: undefined, fn: () => 1, sym: Symbol("s"), kept: 1 }, [undefined, () => 1, Symbol("s")], Object.assign(Object.create(null) as object, { bare: 1 }),
      { 2: "b", 1: "a", z: "z", y: "y" }, { at: new Date(0) }, { p: new Point(1) }, { custom: { toJSON: () => "mine" } }, Object.assign([1], { toJSON: () => "list" }),
      { nan: Number.NaN, inf: Number.NEGATIVE_INFINITY, neg: -1.5 }, new Array(3), { "quo\"te": "\u2028" },
    ];
    for (const v of values) assert.equal(written((out) => out.value(v)), JSON.stringify(v), JSON.stringify(v));
    let deep: unknown = "leaf";
    for (let i = 0; i < 200; i++) deep = { [`k${i}`]: [deep] };
    assert.equal(written((out) => out.value(deep)), JSON.stringify(deep));
  });

  it("leaves out what an object finds up its prototype, as JSON.stringify does", () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto.polluted = "up the chain";
    try {
      const v = { own: 1, nested: [{ deeper: true }] };
      assert.equal(written((out) => out.value(v)), JSON.stringify(v));
      assert.equal(written((out) => out.value(Object.create({ inherited: 1 }) as object)), JSON.stringify(Object.create({ inherited: 1 })));
    } finally {
      delete proto.polluted;
    }
  });

  it("fails as JSON.stringify does on a cycle and a BigInt, not with a stack overflow", () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = { back: cycle };
    assert.throws(() => written((out) => out.value(cycle)), (err: Error) => err instanceof TypeError && /circular/i.test(err.message));
    assert.throws(() => written((out) => out.value({ n: 1n })), TypeError);
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
