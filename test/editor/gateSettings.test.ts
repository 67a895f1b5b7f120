import assert from "node:assert/strict";
import { englishMessages } from "../../src/core/schema/catalog";
import {
  GATE_NUMBER_FIELDS, numberSetting, numberSettingProblem, quietTimeProblem, readNumberSetting, type GateType,
} from "../../src/core/gateSettings";
import { throughputSettings } from "../../src/core/throughput/throughputSettings";

const t = englishMessages();

/** Whether the module takes `value` for the setting (left out or empty-as-default included). */
const takes = (type: GateType, property: string, value: unknown) => numberSettingProblem(type, property, value, t) === null;

describe("gate settings: one set of bounds and one wording per field (src/core/gateSettings)", () => {
  it("words a problem with the property first, the dialog's label, the rule and the value given", () => {
    assert.equal(numberSettingProblem("frequency-cap-gate", "deferMax", -5, t),
      "deferMax (Defer limit): must be whole seconds from 0 to 31,622,400, got -5");
    assert.equal(numberSettingProblem("quiet-hours-gate", "deferMax", "-5", t),
      "deferMax (Defer limit): must be whole seconds from 0 to 31,622,400, got \"-5\"");
    assert.equal(numberSettingProblem("suppression-gate", "duplicateWindow", 1.5, t),
      "duplicateWindow (Duplicates): must be whole seconds from 0 to 31,622,400, got 1.5");
    assert.equal(numberSettingProblem("throughput-gate", "interval", "", t),
      "interval (Interval): must be seconds above 0, up to 86,400 (fractions allowed), got \"\"");
    assert.equal(numberSettingProblem("throughput-gate", "rate", 0, t), "rate (Rate): must be a number above 0, up to 1,000,000, got 0");
    assert.equal(numberSettingProblem("throughput-gate", "burst", 0, t), "burst (Burst): must be a whole number from 1 to 1,000,000, got 0");
    assert.equal(numberSettingProblem("throughput-gate", "maxWait", 604_801, t), "maxWait (Max wait): must be seconds from 0 to 604,800 (fractions allowed), got 604801");
    assert.equal(numberSettingProblem("frequency-cap-gate", "jitter", true, t), "jitter (Jitter): must be whole seconds from 0 to 86,400, got true");
    assert.equal(quietTimeProblem("end", "", t), "end (Quiet until): must be a time of day HH:MM, from 00:00 to 23:59, got \"\"");
    assert.equal(quietTimeProblem("start", "25:00", t), "start (Quiet from): must be a time of day HH:MM, from 00:00 to 23:59, got \"25:00\"");
  });

  it("leaves a property the flow left out to the runtime's default, and refuses an emptied input except burst (the rate)", () => {
    for (const [type, fields] of Object.entries(GATE_NUMBER_FIELDS) as [GateType, Record<string, unknown>][]) {
      for (const property of Object.keys(fields)) {
        assert.deepEqual(readNumberSetting(type, property, undefined, t), { fallback: true }, `${type} ${property} left out`);
        assert.deepEqual(readNumberSetting(type, property, null, t), { fallback: true }, `${type} ${property} null`);
        assert.equal(takes(type, property, ""), property === "burst", `${type} ${property} empty`);
      }
    }
    assert.equal(quietTimeProblem("start", undefined, t), null);
    assert.equal(numberSetting("frequency-cap-gate", "deferMax", undefined, t), 21_600);
    assert.equal(numberSetting("quiet-hours-gate", "deferMax", undefined, t), 86_400);
    assert.equal(numberSetting("suppression-gate", "duplicateWindow", undefined, t), 86_400);
    assert.equal(numberSetting("throughput-gate", "burst", "", t, 2.6), 3, "burst left empty is the rate, whole, at least 1");
    assert.equal(numberSetting("throughput-gate", "burst", undefined, t, 0.2), 1);
    assert.equal(numberSetting("throughput-gate", "maxWait", "0.25", t), 0.25);
    assert.throws(() => numberSetting("frequency-cap-gate", "deferMax", -5, t), { message: /^deferMax \(Defer limit\): must be whole seconds/ });
  });

  it("takes each field's bounds, whole where it says whole, and decimal text only", () => {
    const cases: [GateType, string, unknown[], unknown[]][] = [
      ["frequency-cap-gate", "deferMax", [0, 1, "60", " 60 ", 21_600, 31_622_400, "1e3"], [-1, -5, 0.5, 31_622_401, "abc", "0x10", Number.NaN, Number.POSITIVE_INFINITY, true, [], {}]],
      ["frequency-cap-gate", "jitter", [0, 900, 86_400], [-1, 1.5, 86_401]],
      ["quiet-hours-gate", "deferMax", [0, 86_400, 31_622_400], [-5, 2.5, 31_622_401]],
      ["quiet-hours-gate", "jitter", [0, 60, 86_400], [-1, 86_401, 0.5]],
      ["suppression-gate", "duplicateWindow", [0, 600, 86_400, 31_622_400], [-1, 1.5, 31_622_401]],
      ["throughput-gate", "rate", [0.5, 1, 10, "3000", 1_000_000], [0, -1, 1_000_001, "ten"]],
      ["throughput-gate", "interval", [0.001, 1, 60, 86_400], [0, -1, 86_401]],
      ["throughput-gate", "burst", [1, 5, "10", 1_000_000], [0, 1.5, -1, 1_000_001]],
      ["throughput-gate", "maxWait", [0, 0.1, 60, 604_800], [-0.1, 604_801]],
    ];
    for (const [type, property, good, bad] of cases) {
      for (const v of good) assert.ok(takes(type, property, v), `${type} ${property} takes ${JSON.stringify(v)}`);
      for (const v of bad) assert.ok(!takes(type, property, v), `${type} ${property} refuses ${JSON.stringify(v)}`);
    }
    for (const v of ["00:00", "9:05", "23:59", "21:00"]) assert.equal(quietTimeProblem("end", v, t), null, v);
    for (const v of ["", "24:00", "12:60", "noon", "12.30", 1200, " 08:00"]) assert.notEqual(quietTimeProblem("end", v, t), null, String(v));
  });

  it("is what the throughput-gate's deploy check reads: the same values taken and refused, the same words", () => {
    const probe: unknown[] = [undefined, null, "", 0, -5, 0.5, 1, 10, "10", 86_401, 604_801, 1_000_001, 31_622_401, "abc", "0x10", true];
    for (const property of ["rate", "interval", "burst", "maxWait"]) {
      for (const value of probe) {
        let refusal: string | undefined;
        try {
          throughputSettings({ [property]: value });
        } catch (err) {
          refusal = (err as Error).message;
        }
        assert.equal(refusal ?? null, numberSettingProblem("throughput-gate", property, value, t), `${property} ${JSON.stringify(value)}`);
      }
    }
  });
});
