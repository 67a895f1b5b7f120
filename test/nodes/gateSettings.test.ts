import assert from "node:assert/strict";
import quietHoursGate from "../../src/nodes/quietHoursGate";
import throughputGate from "../../src/nodes/throughputGate";
import { numberSetting, numberSettingProblem, quietTimeProblem, type GateType } from "../../src/core/gateSettings";
import { englishMessages } from "../../src/core/schema/catalog";
import { flowNode, gateNodes, helper, TAB } from "../support/nodeRed";
import { helperSuite } from "../support/helperSuite";

const t = englishMessages();

/** The errors the gate `gate` logged at deploy, as text. */
function errorsOf(id: string): string[] {
  const spy = helper.log() as unknown as { args: [{ level: number; id?: string; msg: unknown }][] };
  return spy.args.map(([entry]) => entry).filter((e) => e.level === 20 && e.id === id).map((e) => String(e.msg));
}

/**
 * A gate deployed with a bad setting says at deploy what its dialog says of
 * the same value: one set of bounds and one wording (src/core/gateSettings),
 * read by the editor and the runtime alike.
 */
describe("gate settings: the deploy check says what the dialog says", function () {
  this.timeout(20_000);
  helperSuite();

  const cases: [GateType, string, unknown][] = [
    ["frequency-cap-gate", "deferMax", -5],
    ["frequency-cap-gate", "jitter", 1.5],
    ["quiet-hours-gate", "deferMax", "0x10"],
    ["quiet-hours-gate", "jitter", 86_401],
    ["suppression-gate", "duplicateWindow", ""],
    ["throughput-gate", "rate", 0],
    ["throughput-gate", "interval", ""],
    ["throughput-gate", "burst", 1.5],
    ["throughput-gate", "maxWait", 604_801],
  ];
  for (const [type, property, value] of cases) {
    it(`${type} ${property} ${JSON.stringify(value)}`, async () => {
      await helper.load([...gateNodes, quietHoursGate, throughputGate], [
        TAB,
        { id: "cfg", type: "cap-config", store: "memory", rules: [] },
        flowNode({ id: "gate", type, config: "cfg", [property]: value, wires: [[], [], []] }),
      ]);
      assert.deepEqual(errorsOf("gate"), [numberSettingProblem(type, property, value, t)]);
      // the runtime's error carries a code and the dialog's label, which the gate's status shows
      assert.throws(() => numberSetting(type, property, value, t), { code: "INVALID_SETTING", field: property, label: t(`sendgate.settings.label.${property}`) });
    });
  }

  it("quiet-hours-gate: an emptied end time is refused, as the dialog refuses it", async () => {
    await helper.load([...gateNodes, quietHoursGate], [
      TAB,
      { id: "cfg", type: "cap-config", store: "memory", rules: [] },
      flowNode({ id: "gate", type: "quiet-hours-gate", config: "cfg", end: "", wires: [[], [], []] }),
    ]);
    assert.deepEqual(errorsOf("gate"), [quietTimeProblem("end", "", t)]);
  });
});
