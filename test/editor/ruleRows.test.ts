import assert from "node:assert/strict";
import { buildRule, displayOf, fixedPeriod, listTextOf, matchTextOf, newRowValues, parseMatch, secondsOf, tableRulesOf, windowOf, type RowValues, type Rule } from "../../src/editor/model/ruleRows";

/** A row as loaded: what it shows, and that it reads back unchanged. */
function loaded(rule: Rule): { rule: Rule; initial: RowValues } {
  return { rule, initial: displayOf(rule) };
}

function edited(rule: Rule, change: Partial<RowValues>): Rule {
  const { initial } = loaded(rule);
  return buildRule({ ...initial, ...change }, rule, initial).rule;
}

/** Hand-written caps of every shape the table has to keep: odd key order, values it cannot show, fields it has no column for. */
const HAND_WRITTEN: Rule[] = [
  { window_seconds: 86400, id: "mkt-daily", max_count: 3, scope: "channel", channel: "sms", applies_to_categories: ["marketing", "promotional"] },
  { id: "g", scope: "global", channel: "*", enabled: true, max_count: 10, window_seconds: 3960, window_type: "rolling", disposition: "skip" },
  { id: "ads", org: "acme", name: "Ad, 1 a day", scope: "channel", channel: "push", max_count: 1, window_seconds: 86400, window_type: "calendar_day",
    per: ["campaign_id", "ad_id"], match: { campaign_id: ["camp_1", "camp_2"], ad_id: ["a;9"] }, disposition: "collapse",
    created_at: "2026-11-30T00:00:00Z", updated_at: "2026-11-30T00:00:00Z" },
  { id: "odd", scope: "channel", channel: "sms", max_count: 2, window_seconds: 60, applies_to_categories: ["a,b", " padded "], enabled: false },
  { enforcement: "enforce", id: "on", scope: "global", max_count: 5, window_seconds: 60 },
  { id: "trial", scope: "global", max_count: 1, window_seconds: 3600, enforcement: "shadow" },
  { id: "ad-budget", scope: "global", counts: "total", per: ["ad_id"], max_count: 1000000, window_seconds: 1, window_type: "lifetime" },
  { counts: "per_recipient", id: "explicit", scope: "channel", channel: "sms", max_count: 2, window_seconds: 60 },
];

describe("editor/model: a rules table row", () => {
  it("saves a rule it did not change back exactly, key order and all", () => {
    for (const rule of HAND_WRITTEN) {
      const { initial } = loaded(rule);
      const { rule: saved, problems } = buildRule({ ...initial }, rule, initial);
      assert.equal(JSON.stringify(saved), JSON.stringify(rule));
      assert.deepEqual(problems, {});
    }
  });

  it("edits enforcement: shadow is written, enforce again drops a key the rule never had", () => {
    const rule: Rule = { id: "new-cap", scope: "global", max_count: 1, window_seconds: 60 };
    assert.equal(displayOf(rule).enforcement, "enforce");
    const shadow = edited(rule, { enforcement: "shadow" });
    assert.deepEqual(shadow, { ...rule, enforcement: "shadow" });
    assert.deepEqual(edited(shadow, { enforcement: "enforce" }), { ...rule, enforcement: "enforce" }, "a loaded key is kept, set to enforce");
    const fresh = buildRule({ ...newRowValues("sms"), id: "x", max: "2", enforcement: "enforce" }).rule;
    assert.equal("enforcement" in fresh, false, "a new row left at enforce says nothing");
  });

  it("edits counts as enforcement: total is written, per recipient again drops a key the rule never had", () => {
    const rule: Rule = { id: "campaign", scope: "global", max_count: 500, window_seconds: 86400 };
    assert.equal(displayOf(rule).counts, "per_recipient");
    const total = edited(rule, { counts: "total" });
    assert.deepEqual(total, { ...rule, counts: "total" });
    assert.equal(displayOf(total).counts, "total");
    assert.deepEqual(edited(total, { counts: "per_recipient" }), { ...rule, counts: "per_recipient" }, "a loaded key is kept, set to per_recipient");
    const fresh = buildRule({ ...newRowValues("sms"), id: "x", max: "2", counts: "per_recipient" }).rule;
    assert.equal("counts" in fresh, false, "a new row left per recipient says nothing");
    // a new total, lifetime row: window_seconds stays (the schema requires it), the keys in SPEC §4's order
    const lifetime = buildRule({ ...newRowValues("sms"), id: "ad", max: "1000", windowType: "lifetime", counts: "total" }).rule;
    assert.equal(JSON.stringify(lifetime), JSON.stringify({ id: "ad", scope: "channel", channel: "sms", max_count: 1000, window_seconds: 86400, window_type: "lifetime", counts: "total" }));
    // a value the select does not offer is kept as typed, for the schema to name
    assert.equal(displayOf({ ...rule, counts: "everyone" }).counts, "everyone");
    assert.deepEqual(edited({ ...rule, counts: "everyone" }, { max: "3" }), { ...rule, counts: "everyone", max_count: 3 });
  });

  it("knows which window types have a period of their own instead of window_seconds", () => {
    assert.deepEqual(["rolling", "calendar_day", "calendar_week", "lifetime"].map(fixedPeriod), [false, true, true, true]);
  });

  it("goes table → JSON → table → JSON without a change", () => {
    const json = JSON.stringify(HAND_WRITTEN.map((r) => buildRule(displayOf(r), r, displayOf(r)).rule), null, 4);
    const back = tableRulesOf(json);
    assert.ok("rules" in back);
    const again = back.rules.map((r) => buildRule(displayOf(r), r, displayOf(r)).rule);
    assert.equal(JSON.stringify(again, null, 4), json);
    assert.deepEqual(again, HAND_WRITTEN);
  });

  it("shows lists and matches as text where that reads back the same, else as JSON", () => {
    assert.equal(listTextOf(["marketing", "promotional"]), "marketing, promotional");
    assert.equal(listTextOf(["a,b"]), '["a,b"]');
    assert.equal(listTextOf([" padded "]), '[" padded "]');
    assert.equal(matchTextOf({ campaign_id: ["camp_1", "camp_2"] }), "campaign_id=camp_1|camp_2");
    assert.equal(matchTextOf({ ad_id: ["a;9"] }), '{"ad_id":["a;9"]}');
    assert.deepEqual(windowOf(86400), { number: "1", unit: "days" });
    assert.deepEqual(windowOf(3960), { number: "66", unit: "minutes" });
    assert.equal(secondsOf(1.1, "hours"), 3960);
  });

  it("rewrites only the fields the author touched", () => {
    const [daily, global] = HAND_WRITTEN as [Rule, Rule];
    assert.deepEqual(edited(daily, { max: "5" }), { ...daily, max_count: 5 });
    assert.deepEqual(edited(daily, { windowNumber: "2", windowUnit: "hours" }), { ...daily, window_seconds: 7200 });
    assert.deepEqual(edited(daily, { categories: "" }), { window_seconds: 86400, id: "mkt-daily", max_count: 3, scope: "channel", channel: "sms" });
    assert.deepEqual(edited(daily, { enabled: false }), { ...daily, enabled: false });
    assert.deepEqual(edited(daily, { scope: "global" }), { window_seconds: 86400, id: "mkt-daily", max_count: 3, scope: "global", applies_to_categories: ["marketing", "promotional"] });
    assert.deepEqual(edited(daily, { match: "campaign_id=c1|c2; ad_id=a9" }), { ...daily, match: { campaign_id: ["c1", "c2"], ad_id: ["a9"] } });
    // a rule that named its defaults keeps naming them
    assert.deepEqual(edited(global, { disposition: "skip", windowType: "rolling", enabled: true, name: "all" }), { ...global, name: "all" });
  });

  it("builds a new row's cap in SPEC order, leaving defaults out", () => {
    const rule = buildRule({ ...newRowValues("sms"), id: "new", max: "3" }).rule;
    assert.equal(JSON.stringify(rule), JSON.stringify({ id: "new", scope: "channel", channel: "sms", max_count: 3, window_seconds: 86400 }));
  });

  it("keeps what it cannot read as typed, and says why", () => {
    const { rule, problems } = buildRule({ ...newRowValues("sms"), id: "x", max: "many", match: "campaign_id", per: "[oops" });
    assert.equal(rule.max_count, "many");
    assert.equal(rule.match, "campaign_id");
    assert.deepEqual(Object.keys(problems).sort(), ["match", "per"]);
    assert.equal(problems.match?.key, "matchSyntax");
    assert.deepEqual(parseMatch("a=1; a=2").problem, { key: "matchTwice", params: { name: "a" } });
    assert.deepEqual(parseMatch("a=").problem, { key: "matchEmpty", params: { name: "a" } });
  });

  it("opens as JSON what the table cannot show", () => {
    assert.deepEqual(tableRulesOf("[1, 2]"), { problem: { key: "notObject", params: {} } });
    assert.deepEqual(tableRulesOf('{"id": "a"}'), { problem: { key: "notArray", params: {} } });
    assert.equal("problem" in tableRulesOf("[{"), true);
    assert.deepEqual(tableRulesOf(""), { rules: [] });
  });
});
