import assert from "node:assert/strict";
import { capCounterField, capCounterKey, encodeKeyPart, recipientHashTag, recipientToken } from "../../src/core/caps/keys";
import { englishMessages } from "../../src/core/schema/catalog";
import { keyPrefixProblem } from "../../src/core/settingsChecks";

describe("core/keys", () => {
  it("keeps an org with a separator apart from a recipient with one (a:b + c vs a + b:c)", () => {
    const one = capCounterKey("fc", "a:b", "c");
    const two = capCounterKey("fc", "a", "b:c");
    assert.notEqual(one, two);
    const pipeOne = capCounterKey("fc", "a|b", "c");
    const pipeTwo = capCounterKey("fc", "a", "b|c");
    assert.notEqual(pipeOne, pipeTwo);
  });

  it("keeps per values apart from the cap id", () => {
    assert.notEqual(capCounterField("cap:x", []), capCounterField("cap", ["x"]));
    assert.notEqual(capCounterField("cap", ["a:b"]), capCounterField("cap", ["a", "b"]));
    assert.equal(capCounterField("__proto__", ["constructor"]), "__proto__:constructor");
  });

  it("encodes injectively across awkward strings, including lone surrogates and braces", () => {
    const samples = ["", "a", "A", "%", "%25", "%u0025", "{", "}", "{x}", ":", "|", "é", "e\u0301", "\uD800", "\uFFFD",
      "😀", "a b", "a+b", "+1 555 0100", "bob@example.com", "ü", "%fc", "%u00fc", "\u0000", "~", "-_."];
    const encoded = samples.map(encodeKeyPart);
    assert.equal(new Set(encoded).size, samples.length, JSON.stringify(encoded));
    for (const e of encoded) assert.doesNotMatch(e, /[{}:|]/);
  });

  it("encodes every UTF-16 unit as keys written before have it: safe ones as they are, %XX below 0x100, %uXXXX above", () => {
    // the layout is stored data: a key made another way would miss the counters already in Redis
    for (let unit = 0; unit <= 0xffff; unit++) {
      const ch = String.fromCharCode(unit);
      const expected = /[A-Za-z0-9._~-]/.test(ch) ? ch : unit < 0x100 ? `%${unit.toString(16).padStart(2, "0")}` : `%u${unit.toString(16).padStart(4, "0")}`;
      assert.equal(encodeKeyPart(ch), expected, `unit ${unit.toString(16)}`);
      assert.equal(encodeKeyPart(`a${ch}b`), `a${expected}b`);
    }
    assert.equal(encodeKeyPart("+1 555-0100"), "%2b1%20555-0100");
    assert.equal(encodeKeyPart("\uD83D\uDE00x"), "%ud83d%ude00x");
  });

  it("puts every key of one recipient under one hash tag", () => {
    const key = capCounterKey("fc", "acme", "+15550100");
    assert.equal(key, `fc:${recipientHashTag("acme", "+15550100")}:c`);
    assert.equal(key.match(/\{[^}]*\}/)?.[0], "{acme|%2b15550100}");
  });

  it("hashes the recipient with an HMAC when a secret is given, so the address never appears", () => {
    const token = recipientToken("bob@example.com", "s3cret");
    assert.match(token, /^[0-9a-f]{64}$/);
    assert.notEqual(token, recipientToken("bob@example.com", "other"));
    assert.equal(recipientToken("bob@example.com"), "bob@example.com");
  });

  it("refuses a key prefix with braces", () => {
    assert.match(keyPrefixProblem("fc{x}", englishMessages()) ?? "", /key prefix must not contain \{ or \}/);
    assert.equal(keyPrefixProblem("fc:prod", englishMessages()), null);
  });
});
