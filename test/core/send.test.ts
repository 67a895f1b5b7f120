import assert from "node:assert/strict";
import { DEFAULT_CHANNELS } from "../../src/core/channels";
import { SendFieldError } from "../../src/core/errors";
import { parseSend, type RawSend } from "../../src/core/send";

const rules = { channels: DEFAULT_CHANNELS, defaultOrg: "dflt", requireTier: false };

function fieldOf(raw: Partial<RawSend>, requireTier = false): string {
  try {
    parseSend({ recipient: "r", channel: "sms", messageId: "m", ...raw } as RawSend, { ...rules, requireTier });
  } catch (err) {
    assert.ok(err instanceof SendFieldError);
    return err.field;
  }
  assert.fail("expected the send to be refused");
}

describe("core/send: parseSend", () => {
  it("names the field that is wrong", () => {
    assert.equal(fieldOf({ recipient: undefined }), "recipient");
    assert.equal(fieldOf({ recipient: "  " }), "recipient");
    assert.equal(fieldOf({ recipient: 42 }), "recipient");
    assert.equal(fieldOf({ channel: "pigeon" }), "channel");
    assert.equal(fieldOf({ channel: undefined }), "channel");
    assert.equal(fieldOf({}, true), "tier");
    assert.equal(fieldOf({ category: 7 }), "category");
    assert.equal(fieldOf({ attributes: { topic: { a: 1 } } }), "attributes.topic");
    assert.equal(fieldOf({ attributes: "x" }), "attributes");
    assert.equal(fieldOf({ recipientLimits: { cap: -1 } }), "recipientLimits.cap");
    assert.equal(fieldOf({ messageId: undefined, fallbackMessageId: undefined }), "messageId");
  });

  it("falls back to _msgid and to the default org", () => {
    const s = parseSend({ recipient: "r", channel: "sms", fallbackMessageId: "abc" }, rules);
    assert.equal(s.messageId, "abc");
    assert.equal(s.org, "dflt");
    assert.deepEqual(s.attributes, {});
  });

  it("accepts numeric ids and attribute values as strings", () => {
    const s = parseSend({ recipient: "r", channel: "sms", messageId: 12, attributes: { campaign_id: 9 } }, rules);
    assert.equal(s.messageId, "12");
    assert.equal(s.attributes.campaign_id, "9");
  });
});
