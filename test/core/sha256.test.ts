import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { sha256Hex } from "../../src/core/sha256";

describe("sha256Hex", function () {
  it("gives what a Hash object gives for the same text (held msg ids and content hashes stored by earlier versions stay the same)", () => {
    const texts = ["", "a", "héllo wörld — 你好 🚀", "\ud800 lone", "tail \udc00", "\u0000\u2028", JSON.stringify(["held", "cfg", "gate", "org", "r", "sms", "m1"]), "x".repeat(100_000)];
    for (const text of texts) assert.equal(sha256Hex(text), createHash("sha256").update(text, "utf8").digest("hex"), JSON.stringify(text.slice(0, 20)));
  });
});
