import assert from "node:assert/strict";
import { IntegerText } from "../../src/redis/integerText";

describe("IntegerText", () => {
  it("reads a script's comma-joined integers in order: negatives, zeros, a ms clock", () => {
    const numbers = new IntegerText("1764900000123,0,-1,57,-2,9007199254740991");
    assert.deepEqual(Array.from({ length: 6 }, () => numbers.next()), [1764900000123, 0, -1, 57, -2, Number.MAX_SAFE_INTEGER]);
  });

  it("refuses an answer that is not a text (an array of integers, nothing)", () => {
    assert.throws(() => new IntegerText([1, 2]), /answered object, not a text/);
    assert.throws(() => new IntegerText(undefined), /answered undefined, not a text/);
  });

  it("throws, naming the answer, where no integer is, never answering NaN", () => {
    for (const [text, reads] of [["", 1], ["1,2", 3], ["1,x", 2], ["1.5", 1], ["-", 1], ["3 ,4", 1], ["1,,2", 2]] as const) {
      const numbers = new IntegerText(text);
      for (let i = 0; i < reads - 1; i++) numbers.next();
      assert.throws(() => numbers.next(), /a script answered .*no integer at/, `${JSON.stringify(text)}, read ${reads}`);
    }
  });
});
