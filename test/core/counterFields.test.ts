import assert from "node:assert/strict";
import { CounterFieldCache } from "../../src/core/caps/counterFields";
import { capCounterField } from "../../src/core/caps/keys";
import { namesRecord } from "../../src/core/ownKeys";
import { withDefaults } from "../../src/core/rules/rules";

function attributes(values: Record<string, string>): Record<string, string> {
  const record = namesRecord<string>();
  for (const [name, value] of Object.entries(values)) record[name] = value;
  return record;
}

describe("core/counterFields", () => {
  const rule = withDefaults({ id: "ad:daily", scope: "global", max_count: 3, window_seconds: 86_400, per: ["campaign_id", "ad_id"], match: { tier: ["gold", "silver"] } });

  it("names each (rule, per values) as capCounterField does, values that need encoding included, and the same string again for the same values", () => {
    const cache = new CounterFieldCache();
    const cases = [{ campaign_id: "c1", ad_id: "a1" }, { campaign_id: "c1", ad_id: "a2" }, { campaign_id: "c:1", ad_id: "a1" }, { campaign_id: "c1|", ad_id: "__proto__" }];
    for (const values of cases) {
      const field = cache.field(rule, attributes(values));
      assert.equal(field, capCounterField(rule.id, [values.campaign_id, values.ad_id]));
      assert.equal(cache.field(rule, attributes(values)), field);
    }
    assert.equal(new Set(cases.map((v) => cache.field(rule, attributes(v)))).size, cases.length, "different values, different fields");
  });

  it("starts a rule's cache again past 10,000 fields, and still names every one right", () => {
    const cache = new CounterFieldCache();
    for (let i = 0; i < 25_000; i++) {
      const values = { campaign_id: `c${i % 7}`, ad_id: `a${i}` };
      assert.equal(cache.field(rule, attributes(values)), capCounterField(rule.id, [values.campaign_id, values.ad_id]));
    }
  });

  it("reads a rule's match list once, as the rule gives it", () => {
    const cache = new CounterFieldCache();
    assert.deepEqual(cache.match(rule), [["tier", ["gold", "silver"]]]);
    assert.equal(cache.match(rule), cache.match(rule));
  });
});
