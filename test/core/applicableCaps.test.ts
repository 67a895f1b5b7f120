import assert from "node:assert/strict";
import { applicableCaps } from "../../src/core/caps/applicableCaps";
import { parseSend, type RawSend } from "../../src/core/send";
import { DEFAULT_CHANNELS } from "../../src/core/channels";
import { validateRules } from "../../src/core/schema/validateRules";

const rules = validateRules([
  { id: "sms-any", scope: "channel", channel: "sms", max_count: 10, window_seconds: 3600 },
  { id: "sms-mkt", scope: "channel", channel: "sms", max_count: 3, window_seconds: 86400, applies_to_categories: ["marketing"] },
  { id: "email-any", scope: "channel", channel: "email", max_count: 5, window_seconds: 3600 },
  { id: "global", scope: "global", max_count: 20, window_seconds: 86400 },
  { id: "acme-only", org: "acme", scope: "global", max_count: 2, window_seconds: 60 },
  { id: "off", scope: "global", max_count: 1, window_seconds: 60, enabled: false },
  { id: "per-campaign", scope: "channel", channel: "push", max_count: 10, window_seconds: 86400, per: ["campaign_id"] },
  { id: "ad-42", scope: "channel", channel: "push", max_count: 3, window_seconds: 86400, match: { ad_id: ["42"] }, per: ["ad_id"] },
]);

function send(raw: Partial<RawSend>) {
  return parseSend({ recipient: "r1", channel: "sms", messageId: "m1", ...raw },
    { channels: DEFAULT_CHANNELS, defaultOrg: "default", requireTier: false });
}

function ids(raw: Partial<RawSend>): string[] {
  return applicableCaps(rules, send(raw), "fc", "r1").map((c) => c.rule.id);
}

describe("core/applicableCaps", () => {
  it("unions the channel's caps and the global ones; untagged sends hit only uncategorised caps", () => {
    assert.deepEqual(ids({}), ["sms-any", "global"]);
    assert.deepEqual(ids({ category: "marketing" }), ["sms-any", "sms-mkt", "global"]);
    assert.deepEqual(ids({ category: "otp" }), ["sms-any", "global"]);
    assert.deepEqual(ids({ channel: "email" }), ["email-any", "global"]);
  });

  it("applies org-bound caps only to that org and skips disabled caps", () => {
    assert.deepEqual(ids({ org: "acme" }), ["sms-any", "global", "acme-only"]);
  });

  it("splits by per, limits by match, and skips a per-cap when the attribute is missing", () => {
    assert.deepEqual(ids({ channel: "push" }), ["global"]);
    assert.deepEqual(ids({ channel: "push", attributes: { campaign_id: "c1" } }), ["global", "per-campaign"]);
    assert.deepEqual(ids({ channel: "push", attributes: { campaign_id: "c1", ad_id: "42" } }), ["global", "per-campaign", "ad-42"]);
    assert.deepEqual(ids({ channel: "push", attributes: { ad_id: "43" } }), ["global"]);
    const [, c1] = applicableCaps(rules, send({ channel: "push", attributes: { campaign_id: "c1" } }), "fc", "r1");
    const [, c2] = applicableCaps(rules, send({ channel: "push", attributes: { campaign_id: "c2" } }), "fc", "r1");
    assert.equal(c1?.key, c2?.key, "one hash per recipient");
    assert.deepEqual([c1?.field, c2?.field], ["per-campaign:c1", "per-campaign:c2"]);
  });

  it("finds caps and per attributes named like Object.prototype members as plain names (never inherited members)", () => {
    const named = validateRules(["constructor", "toString", "__proto__", "hasOwnProperty"].map((id) => ({
      id, scope: "channel", channel: "sms", max_count: 4, window_seconds: 60, per: [id],
    })));
    assert.deepEqual(applicableCaps(named, send({}), "fc", "r1"), [], "a send without the per attribute is not counted");
    const attributes = JSON.parse('{"constructor": "a", "toString": "b", "__proto__": "c", "hasOwnProperty": "d"}');
    const caps = applicableCaps(named, send({ attributes }), "fc", "r1");
    assert.deepEqual(caps.map((c) => [c.rule.id, c.max]), [["constructor", 4], ["toString", 4], ["__proto__", 4], ["hasOwnProperty", 4]]);
    assert.deepEqual(caps.map((c) => c.field.split(":").at(-1)), ["a", "b", "c", "d"]);
    const lowered = applicableCaps(named, send({ attributes, recipientLimits: JSON.parse('{"__proto__": 1}') }), "fc", "r1");
    assert.deepEqual(lowered.map((c) => c.max), [4, 4, 1, 4]);
  });

  it("lets recipientLimits lower a cap but never raise it", () => {
    const caps = applicableCaps(rules, send({ category: "marketing", recipientLimits: { "sms-mkt": 1, "sms-any": 50 } }), "fc", "r1");
    assert.equal(caps.find((c) => c.rule.id === "sms-mkt")?.max, 1);
    assert.equal(caps.find((c) => c.rule.id === "sms-any")?.max, 10);
  });
});
