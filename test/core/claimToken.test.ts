import assert from "node:assert/strict";
import { claimToken } from "../../src/core/store/counterEntry";

describe("claim attempt tokens", () => {
  it("never gives two attempts of one process the same token within 65,535 claims (two copies of one msg in flight must tell their entries apart)", () => {
    const tokens = Array.from({ length: 65_535 }, () => claimToken());
    assert.ok(tokens.every((t) => Number.isInteger(t) && t >= 1 && t <= 65_535), "each fits the entry's 2 bytes, 0 being a record's");
    assert.equal(new Set(tokens).size, 65_535);
  });
});
