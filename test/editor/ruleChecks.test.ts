import assert from "node:assert/strict";
import { DEFAULT_CHANNELS } from "../../src/core/channels";
import { RuleValidationError } from "../../src/core/errors";
import { englishMessages } from "../../src/core/schema/catalog";
import { validateRules } from "../../src/core/schema/validateRules";
import { checkRules, checkTable, deployProblem } from "../../src/editor/model/ruleChecks";
import { displayOf, newRowValues, type Rule, type RowValues } from "../../src/editor/model/ruleRows";

const t = englishMessages();
const channels = [...DEFAULT_CHANNELS];

/** What the runtime says at deploy for these rules. */
function runtimeProblems(rules: unknown): string[] {
  try {
    validateRules(rules, channels);
    return [];
  } catch (err) {
    assert.ok(err instanceof RuleValidationError);
    return err.problems;
  }
}

function row(rule: Rule, change: Partial<RowValues> = {}) {
  const initial = displayOf(rule);
  return { now: { ...initial, ...change }, original: rule, initial };
}

const BAD: Rule[] = [
  { id: "a", scope: "channel", channel: "sms", max_count: 0, window_seconds: 60 },
  { id: "a", scope: "global", channel: "sms", max_count: 2, window_seconds: 400 * 86400, disposition: "later" },
  { id: "p", scope: "channel", channel: "pigeon", max_count: 1, window_seconds: 60, colour: "red" },
];

describe("editor/model: rule checks speak the runtime's words", () => {
  it("lists in the JSON view exactly what the deploy refuses, rules counted from 1", () => {
    const lines = checkRules(JSON.stringify(BAD), channels, t);
    assert.deepEqual(lines, runtimeProblems(BAD));
    assert.ok(lines.includes('rule 1 ("a") max_count: must be a whole number from 1 to 1000000'), lines.join("\n"));
    assert.ok(lines.includes('rule 2 ("a") id: duplicate of rule 1'), lines.join("\n"));
    assert.ok(lines.includes('rule 3 ("p") unknown property "colour"'), lines.join("\n"));
  });

  it("shows each row the same problems, without the rule's name, which the row number gives", () => {
    const reports = checkTable(BAD.map((r) => row(r)), channels, t);
    const runtime = runtimeProblems(BAD);
    reports.forEach((report, index) => {
      const prefix = new RegExp(`^rule ${index + 1} \\("[a-z]+"\\) `);
      const expected = runtime.filter((p) => prefix.test(p)).map((p) => p.replace(prefix, ""));
      assert.deepEqual(report.problems.map((p) => p.text).sort(), expected.sort());
    });
    assert.deepEqual(reports[1]?.problems.map((p) => p.field).sort(), ["channel", "disposition", "id", "window_seconds"]);
  });

  it("says a field it could not read once, in the table's words, not again in the schema's", () => {
    const [report] = checkTable([row({ id: "m", scope: "global", max_count: 1, window_seconds: 60 }, { match: "nonsense" })], channels, t);
    assert.deepEqual(report?.problems, [{ field: "match", text: 'match: write attribute=value|value; … ("nonsense" names no attribute)' }]);
  });

  it("names a lifetime window on a per-recipient row under window_type, as the deploy does, and nothing once it counts a total", () => {
    const rule: Rule = { id: "ever", scope: "global", max_count: 1000, window_seconds: 86400 };
    const [perRecipient] = checkTable([row(rule, { windowType: "lifetime" })], channels, t);
    assert.deepEqual(perRecipient?.problems, [{ field: "window_type", text: 'window_type: "lifetime" never resets, so only a total cap (counts: "total") may use it' }]);
    assert.deepEqual(runtimeProblems([perRecipient?.rule]), ['rule 1 ("ever") window_type: "lifetime" never resets, so only a total cap (counts: "total") may use it']);
    const [total] = checkTable([row(rule, { windowType: "lifetime", counts: "total" })], channels, t);
    assert.deepEqual(total?.problems, []);
    assert.deepEqual(total?.rule, { ...rule, window_type: "lifetime", counts: "total" });
    const [unknown] = checkTable([row({ ...rule, counts: "everyone" })], channels, t);
    assert.deepEqual(unknown?.problems.map((p) => p.field), ["counts"]);
  });

  it("finds ids used twice across rows as the author types them", () => {
    const reports = checkTable([
      { now: { ...newRowValues("sms"), id: "x", max: "1" } },
      { now: { ...newRowValues("email"), id: "x", max: "1" } },
    ], channels, t);
    assert.deepEqual(reports.map((r) => r.problems.map((p) => p.text)), [[], ["id: duplicate of rule 1"]]);
  });

  it("gives the deploy check one line: the first problem and how many more", () => {
    assert.equal(deployProblem(BAD, channels, t), `${runtimeProblems(BAD)[0]} (and ${runtimeProblems(BAD).length - 1} more)`);
    assert.equal(deployProblem([], channels, t), null);
    assert.equal(deployProblem("[{", channels, t)?.startsWith("rules: not valid JSON ("), true);
    assert.equal(deployProblem({ id: "a" }, channels, t), "rules: must be a JSON array of caps");
  });
});
