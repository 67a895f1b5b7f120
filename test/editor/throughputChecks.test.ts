import assert from "node:assert/strict";
import { throughputKeyProblem } from "../../src/core/settingsChecks";
import { throughputSettings } from "../../src/core/throughput/throughputSettings";

describe("throughput-gate: the dialog's key check and the runtime's agree", () => {
  it("keyType and key: a known source, and a property, expression or text where the source needs one", () => {
    const cases: [unknown, unknown][] = [
      [undefined, ""], ["org", ""], ["channel", undefined], ["msg", "topic"], ["msg", ""], ["msg", "  "], ["str", "acme"], ["str", ""],
      ["jsonata", "org & '-' & channel"], ["env", "CEILING"], ["flow", ""], ["bogus", "x"], [42, "x"],
    ];
    for (const [keyType, key] of cases) {
      let runtime = true;
      try {
        throughputSettings({ id: "n", type: "throughput-gate", name: "", z: "", keyType, key } as unknown as Parameters<typeof throughputSettings>[0]);
      } catch (err) {
        assert.match((err as Error).message, /^(keyType|key): /, "a refusal names its property");
        runtime = false;
      }
      assert.equal(throughputKeyProblem(keyType, key) === null, runtime, `${String(keyType)} ${JSON.stringify(key)}`);
    }
    assert.equal(throughputKeyProblem("str", ""), "key", "an empty text key would fail every msg");
    assert.equal(throughputKeyProblem("bogus", "x"), "keyType");
  });
});
