import assert from "node:assert/strict";
import { SlotLine } from "../../src/core/sendQueue/slotLine";

describe("SlotLine", () => {
  it("gives back 5,000 slots in the order they came, across chunks, pushes and shifts interleaved", () => {
    const line = new SlotLine<number>();
    const taken: number[] = [];
    let next = 0;
    // runs of pushes longer than the shifts between them: the line grows over several chunks, then drains
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 70; i++) line.push(next++);
      for (let i = 0; i < 30; i++) taken.push(line.shift());
    }
    assert.equal(line.length, next - taken.length);
    while (line.length > 0) taken.push(line.shift());
    assert.equal(taken.length, 3500);
    assert.deepEqual(taken, Array.from({ length: 3500 }, (_, i) => i));
  });

  it("starts over once emptied, in order, and keeps falsy values as they are", () => {
    const line = new SlotLine<unknown>();
    for (let i = 0; i < 1500; i++) line.push(i);
    for (let i = 0; i < 1500; i++) assert.equal(line.shift(), i);
    assert.equal(line.length, 0);
    for (const value of [false, 0, "", null, undefined, "x"]) line.push(value);
    assert.equal(line.length, 6);
    assert.deepEqual([line.shift(), line.shift(), line.shift(), line.shift(), line.shift(), line.shift()], [false, 0, "", null, undefined, "x"]);
    assert.equal(line.length, 0);
  });
});
