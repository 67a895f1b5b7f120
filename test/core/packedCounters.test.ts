import assert from "node:assert/strict";
import { digestOf, packTail, tokenOf } from "../../src/core/store/counterEntry";
import { JsonBytes } from "../../src/core/jsonBytes";
import { entriesOf, packed, repacked, writePackedJson, type Entry, type PackedCounters } from "../../src/core/store/packedCounters";

/** Each field and its entries, as a snapshot lists them (the shape the store kept before it packed them). */
function unpacked(p: PackedCounters): [string, Entry[]][] {
  const fields: [string, Entry[]][] = [];
  for (let i = 1; i < p.length; i++) {
    const item = p[i];
    if (typeof item === "string") fields.push([item, []]);
    else {
      const tail = p[++i] as number;
      fields[fields.length - 1][1].push([item, digestOf(tail), tokenOf(tail)]);
    }
  }
  return fields;
}

/** A recipient's snapshot text, as a save writes it. */
function packedJson(key: string, counters: PackedCounters): string {
  const out = new JsonBytes(16);
  writePackedJson(out, key, counters);
  return out.text();
}

describe("the memory store's packed counters", () => {
  const day: Entry[] = [[1_000, 0xffffffff, 65535], [2_000, 7, 0]];
  const hour: Entry[] = [[3_000, 12345, 1]];

  it("reads back what it packed: the largest digest and token, a record entry, and fields in their order", () => {
    const p = packed(9_000, [["day", day], ["hour", hour]]);
    assert.deepEqual(unpacked(p as (number | string)[]), [["day", day], ["hour", hour]]);
    assert.deepEqual(entriesOf(p, "hour"), { from: 7, to: 9 });
    assert.deepEqual(entriesOf(p, "week"), { from: 0, to: 0 });
    assert.equal(p?.[0], 9_000);
  });

  it("keeps a written field in its place and puts a new one last; the last of two writes of a field counts; an empty one goes", () => {
    const p = packed(9_000, [["day", day], ["hour", hour]]);
    const next = repacked(p, 10_000, [
      { field: "week", pairs: [4_000, packTail(1, 1)] },
      { field: "day", pairs: [5_000, packTail(2, 2)] },
      { field: "day", pairs: [6_000, packTail(3, 3)] },
    ]);
    assert.deepEqual(unpacked(next as (number | string)[]), [["day", [[6_000, 3, 3]]], ["hour", hour], ["week", [[4_000, 1, 1]]]]);
    assert.equal(next?.[0], 10_000);
    const without = repacked(next, 10_000, [{ field: "hour", pairs: [] }, { field: "week", pairs: [] }]);
    assert.deepEqual(unpacked(without as (number | string)[]), [["day", [[6_000, 3, 3]]]]);
    assert.equal(repacked(without, 10_000, [{ field: "day", pairs: [] }]), undefined, "no field left: nothing to keep");
  });

  it("puts a new field written twice where it was first written, with its last entries", () => {
    const next = repacked(undefined, 1, [{ field: "f", pairs: [1, 1] }, { field: "g", pairs: [2, 2] }, { field: "f", pairs: [3, 3] }]);
    assert.deepEqual((next as (number | string)[]).slice(1), ["f", 3, 3, "g", 2, 2]);
  });

  it("makes an array of exactly the length it fills, with no hole", () => {
    const next = repacked(packed(1, [["a", day]]), 2, [{ field: "b", pairs: [1, 2] }]) as (number | string)[];
    assert.equal(next.length, 1 + 1 + 4 + 1 + 2);
    // every() skips holes: each index is looked at
    for (let i = 0; i < next.length; i++) assert.ok(i in next && next[i] !== undefined, `slot ${i} is filled`);
  });

  it("writes a recipient's snapshot text as JSON.stringify would write its unpacked entry: keys and fields escaped", () => {
    const key = 'fc:{a"b\\c|+1}:c';
    for (const p of [packed(9_000, [["day", day]]), packed(9_000, [["day", day], ['we"ek\n', hour], ["x", day]])]) {
      const counters = p as (number | string)[];
      assert.equal(packedJson(key, counters), JSON.stringify([key, { expiresAt: 9_000, fields: unpacked(counters) }]));
      assert.deepEqual(JSON.parse(packedJson(key, counters)), [key, { expiresAt: 9_000, fields: unpacked(counters) }]);
    }
  });
});
