import assert from "node:assert/strict";
import { englishMessages } from "../../src/core/schema/catalog";
import { burstProblem, positiveNumberProblem, throughputKeyProblem, waitSecondsProblem } from "../../src/core/settingsChecks";
import { throughputSettings } from "../../src/core/throughput/throughputSettings";

const t = englishMessages();

/** Whether the runtime takes this value of the property at deploy (the rest of the node at its defaults). */
function runtimeTakes(property: "rate" | "interval" | "burst" | "maxWait", value: unknown): boolean {
  try {
    throughputSettings({ id: "n", type: "throughput-gate", name: "", z: "", [property]: value } as Parameters<typeof throughputSettings>[0]);
    return true;
  } catch (err) {
    assert.match((err as Error).message, new RegExp(`^${property}: `), "a refusal names its property");
    return false;
  }
}

describe("throughput-gate: the dialog's checks and the runtime's agree", () => {
  const values: unknown[] = [undefined, "", 0, -1, 0.5, 1, 2.5, 10, "10", "abc", "1e3", Number.NaN, 1.5, 100];

  it("rate and interval: a number above 0", () => {
    for (const property of ["rate", "interval"] as const) {
      for (const value of values) {
        assert.equal(positiveNumberProblem(value, property, t) === null, runtimeTakes(property, value), `${property} ${String(value)}`);
      }
    }
    assert.equal(positiveNumberProblem(0, "Rate", t), "Rate must be a number above 0");
  });

  it("burst: a whole number from 1", () => {
    for (const value of values) assert.equal(burstProblem(value, "burst", t) === null, runtimeTakes("burst", value), `burst ${String(value)}`);
    assert.equal(burstProblem(1.5, "Burst", t), "Burst must be a whole number, 1 or more");
  });

  it("maxWait: seconds from 0, fractions allowed", () => {
    for (const value of values) assert.equal(waitSecondsProblem(value, "maxWait", t) === null, runtimeTakes("maxWait", value), `maxWait ${String(value)}`);
  });

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
