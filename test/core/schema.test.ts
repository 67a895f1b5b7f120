import assert from "node:assert/strict";
import { DEFAULT_CHANNELS } from "../../src/core/channels";
import { RuleValidationError } from "../../src/core/errors";
import { englishMessages } from "../../src/core/schema/catalog";
import { describeRuleSetProblem } from "../../src/core/schema/ruleMessages";
import { findRuleSetProblems, type RuleProblemCode } from "../../src/core/schema/ruleProblems";
import { ruleProblems, validateRules } from "../../src/core/schema/validateRules";

function problemsOf(rules: unknown): string[] {
  try {
    validateRules(rules, DEFAULT_CHANNELS);
  } catch (err) {
    assert.ok(err instanceof RuleValidationError);
    return err.problems;
  }
  assert.fail("expected the rules to be refused");
}

describe("core/schema: validateRules", () => {
  it("accepts a full §4 rule and fills defaults", () => {
    const [rule] = validateRules([{
      id: "mkt-daily", org: "acme", name: "Marketing, 3 a day", enabled: true, scope: "channel", channel: "sms",
      max_count: 3, window_seconds: 86400, window_type: "rolling", applies_to_categories: ["marketing", "promotional"],
      per: ["campaign_id"], match: { campaign_id: ["camp_789"] }, disposition: "skip",
    }, { id: "g", scope: "global", max_count: 5, window_seconds: 60 }], DEFAULT_CHANNELS);
    assert.equal(rule?.channel, "sms");
    const global = validateRules([{ id: "g", scope: "global", max_count: 5, window_seconds: 60 }])[0];
    assert.equal(global?.channel, "*");
    assert.equal(global?.enabled, true);
    assert.deepEqual(global?.applies_to_categories, []);
    assert.equal(global?.enforcement, "enforce", "a cap is enforced unless it says shadow");
  });

  it("takes enforcement shadow, and refuses any other value naming the field", () => {
    assert.equal(validateRules([{ id: "s", scope: "global", max_count: 1, window_seconds: 60, enforcement: "shadow" }])[0]?.enforcement, "shadow");
    assert.equal(validateRules([{ id: "e", scope: "global", max_count: 1, window_seconds: 60, enforcement: "enforce" }])[0]?.enforcement, "enforce");
    const problems = problemsOf([{ id: "s", scope: "global", max_count: 1, window_seconds: 60, enforcement: "dry-run" }]);
    assert.deepEqual(problems, ['rule 1 ("s") enforcement: must be one of enforce, shadow']);
  });

  it("refuses a global rule that names a channel", () => {
    const problems = problemsOf([{ id: "g", scope: "global", channel: "sms", max_count: 5, window_seconds: 60 }]);
    assert.ok(problems.some((p) => /channel: a global cap must not name a channel/.test(p)), problems.join("\n"));
  });

  it("accepts a global rule stored with channel '*'", () => {
    assert.equal(validateRules([{ id: "g", scope: "global", channel: "*", max_count: 5, window_seconds: 60 }])[0]?.channel, "*");
  });

  it("refuses a channel rule without a channel, or with '*', or an unknown one", () => {
    assert.ok(problemsOf([{ id: "c", scope: "channel", max_count: 1, window_seconds: 1 }]).some((p) => /channel/.test(p)));
    assert.ok(problemsOf([{ id: "c", scope: "channel", channel: "*", max_count: 1, window_seconds: 1 }]).some((p) => /channel/.test(p)));
    assert.ok(problemsOf([{ id: "c", scope: "channel", channel: "pigeon", max_count: 1, window_seconds: 1 }]).some((p) => /unknown channel "pigeon"/.test(p)));
  });

  it("names every error of every rule at once", () => {
    const problems = problemsOf([
      { id: "a", scope: "channel", channel: "sms", max_count: 0, window_seconds: 60, colour: "red" },
      { id: "b", scope: "sideways", max_count: 2.5, window_seconds: -1 },
    ]);
    const text = problems.join("\n");
    assert.match(text, /rule 1 \("a"\) max_count: must be a whole number from 1 to 1000000/);
    assert.match(text, /rule 1 \("a"\) unknown property "colour"/);
    assert.match(text, /rule 2 \("b"\) scope: must be "channel" or "global"/);
    assert.match(text, /rule 2 \("b"\) max_count: must be a whole number from 1 to 1000000/);
    assert.match(text, /rule 2 \("b"\) window_seconds: must be a whole number of seconds from 1 to 31622400/);
  });

  it("refuses duplicate ids within one org, and unknown dispositions and window types", () => {
    const dup = problemsOf([
      { id: "a", scope: "global", max_count: 1, window_seconds: 1 },
      { id: "a", scope: "global", max_count: 2, window_seconds: 1 },
    ]);
    assert.ok(dup.some((p) => /^rule 2 \("a"\) id: duplicate of rule 1$/.test(p)), dup.join("\n"));
    const defer = problemsOf([{ id: "a", scope: "global", max_count: 1, window_seconds: 1, disposition: "explode", window_type: "lunar" }]);
    assert.ok(defer.some((p) => /disposition/.test(p)));
  });

  it("refuses something that is not a list", () => {
    assert.deepEqual(problemsOf({ id: "a" }), ["rules: must be a JSON array of caps"]);
  });
});

describe("core/schema: ids shared between an every-org rule and an org rule", () => {
  it("refuses them: they would count in one counter", () => {
    const problems = problemsOf([
      { id: "x", scope: "global", max_count: 3, window_seconds: 60 },
      { id: "x", org: "default", scope: "global", max_count: 3, window_seconds: 60 },
    ]);
    assert.ok(problems.some((p) => /rule 2 \("x"\) id: also the id of rule 1, which applies to every org/.test(p)), problems.join("\n"));
  });
});

describe("core/schema: one wording per problem", () => {
  it("words a field's problem the same whichever keyword failed (type, bounds, whole number)", () => {
    const texts = [0, 2.5, "3", 2_000_000].map((max_count) => ruleProblems({ id: "a", scope: "global", max_count, window_seconds: 60 }));
    for (const problems of texts) assert.deepEqual(problems, ["max_count: must be a whole number from 1 to 1000000"]);
  });

  it("names a rule's problems as data: the field, a catalog code and its params, rules counted from 1", () => {
    const found = findRuleSetProblems([
      { id: "ok", scope: "global", max_count: 1, window_seconds: 60 },
      { id: "m", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60, match: { campaign_id: [] }, per: ["a", "a"] },
    ], DEFAULT_CHANNELS);
    assert.deepEqual(found.map((p) => [p.rule, p.id, p.field, p.code]), [
      [2, "m", "per", "uniqueItems"],
      [2, "m", "match.campaign_id", "matchValues"],
    ]);
  });

  it("takes every text from the message catalog: a missing catalog entry would show its key", () => {
    const codes: RuleProblemCode[] = ["notArray", "notObject", "unknownProperty", "required", "text", "name", "boolean", "scope",
      "wholeNumber", "windowSeconds", "oneOf", "list", "uniqueItems", "maxItems", "match", "matchValues", "timestamp",
      "channelMissing", "channelStar", "globalChannel", "unknownChannel", "duplicateId", "everyOrgId"];
    const t = englishMessages();
    for (const code of codes) {
      const text = describeRuleSetProblem({ rule: 3, id: "x", field: "f", code, params: {} }, t);
      assert.ok(!text.includes("sendgate.rules"), `${code}: ${text}`);
      assert.match(text, /^rule 3 \("x"\) f: /);
    }
  });
});
