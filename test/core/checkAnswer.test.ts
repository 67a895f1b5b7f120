import assert from "node:assert/strict";
import { checkAnswer } from "../../src/core/caps/checkAnswer";
import type { Candidate } from "../../src/core/caps/candidates";
import type { CheckVerdict } from "../../src/core/caps/decisions";

function candidate(key: string): Candidate {
  return { key, attributes: Object.create(null) as Record<string, string> };
}

describe("checkAnswer", () => {
  // a caller's ids name the answer's keys: the ones a plain object inherits must land as its own data, not reach a prototype
  const keys = ["__proto__", "constructor", "hasOwnProperty", "toString", "valueOf", "ad-1"];
  const verdicts: CheckVerdict[] = keys.map((_, i) => i % 2 === 0
    ? { eligible: false, remaining: 0, blocked: { cap_id: `cap-${i}`, retry_after_seconds: i } }
    : { eligible: true, remaining: i });

  it("answers every candidate id as an own property, the inherited names and __proto__ too", () => {
    const answer = checkAnswer(keys.map(candidate), verdicts);
    assert.ok("blocked" in answer && typeof answer.eligible === "object");
    const { eligible, remaining, blocked } = answer;
    for (const record of [eligible, remaining]) {
      assert.equal(Object.getPrototypeOf(record), Object.prototype, "a plain object, whose prototype no key replaced");
      assert.deepEqual(Object.keys(record), keys);
    }
    keys.forEach((key, i) => {
      assert.ok(Object.hasOwn(eligible, key), key);
      assert.equal(eligible[key], i % 2 === 1, key);
      assert.equal(remaining[key], verdicts[i].remaining, key);
      assert.equal(Object.hasOwn(blocked, key), i % 2 === 0, key);
    });
    assert.deepEqual(blocked.__proto__, { cap_id: "cap-0", retry_after_seconds: 0 });
    assert.equal(typeof eligible.hasOwnProperty, "boolean", "the id shadows the inherited method");
    assert.equal(Object.prototype.hasOwnProperty.call(eligible, "toString"), true);
    // what a debug node or a JSON encoder of the msg sees
    const json = JSON.parse(JSON.stringify(answer)) as { eligible: Record<string, boolean> };
    assert.deepEqual(Object.keys(json.eligible), keys);
  });

  it("answers every candidate eligible and uncounted with no verdicts (exempt, or failed open)", () => {
    const answer = checkAnswer([candidate("__proto__"), candidate("a")], undefined);
    assert.ok("blocked" in answer && typeof answer.eligible === "object");
    assert.deepEqual(Object.entries(answer.eligible), [["__proto__", true], ["a", true]]);
    assert.deepEqual(Object.entries(answer.remaining), [["__proto__", null], ["a", null]]);
    assert.deepEqual(Object.keys(answer.blocked), []);
  });

  it("answers a msg without candidates with its own send's verdict", () => {
    assert.deepEqual(checkAnswer(undefined, [{ eligible: false, remaining: 0, blocked: { cap_id: "c", retry_after_seconds: null } }]),
      { eligible: false, remaining: 0, blocked: { cap_id: "c", retry_after_seconds: null } });
    assert.deepEqual(checkAnswer(undefined, undefined), { eligible: true, remaining: null });
  });
});
