import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { pacedReleaseId } from "../../src/core/hold/heldIds";

describe("deferral ids", () => {
  it("gives each paced msg a release_id of its own: 32 hex digits, none repeated in 100,000, another process's never the same", () => {
    const ids = Array.from({ length: 100_000 }, () => pacedReleaseId());
    assert.ok(ids.every((id) => /^[0-9a-f]{32}$/.test(id)), `not 32 hex digits: ${ids.find((id) => !/^[0-9a-f]{32}$/.test(id))}`);
    assert.equal(new Set(ids).size, ids.length);
    // a fresh process counts from 1 again: its random part keeps its ids apart from this one's
    const script = `console.log(require(${JSON.stringify(require.resolve("../../src/core/hold/heldIds"))}).pacedReleaseId())`;
    const other = [0, 1].map(() => execFileSync(process.execPath, ["-e", script], { encoding: "utf8" }).trim());
    assert.equal(new Set([...other, pacedReleaseId()]).size, 3, other.join(" "));
    assert.ok(other.every((id) => id.endsWith("1")), "each counted from 1: only the random part tells them apart");
  });
});
