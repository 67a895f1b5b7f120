import assert from "node:assert/strict";
import { DEFAULT_CHANNELS } from "../../src/core/channels";
import { SendFieldError } from "../../src/core/errors";
import { inheritsNothing } from "../../src/core/ownKeys";
import { parseSend, type RawSend } from "../../src/core/send";

const rules = { channels: DEFAULT_CHANNELS, defaultOrg: "dflt", requireTier: false };

function fieldOf(raw: Partial<RawSend>, requireTier = false): string {
  try {
    parseSend({ recipient: "r", channel: "sms", messageId: "m", ...raw }, { ...rules, requireTier });
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
    assert.deepEqual(Object.keys(s.attributes), []);
  });

  it("reads attributes and recipientLimits into records that inherit nothing: inherited names are never found", () => {
    const raw = JSON.parse('{"attributes": {"__proto__": "p", "constructor": "c"}, "recipientLimits": {"__proto__": 0, "toString": 2}}');
    const s = parseSend({ recipient: "r", channel: "sms", messageId: "m", ...raw }, rules);
    assert.ok(inheritsNothing(s.attributes));
    assert.equal(Object.getPrototypeOf(Object.getPrototypeOf(s.attributes)), null, "attributes: an empty prototype with none of its own");
    assert.deepEqual(Object.getOwnPropertyNames(Object.getPrototypeOf(s.attributes)), []);
    assert.equal(Object.getPrototypeOf(s.recipientLimits), null);
    assert.deepEqual(Object.entries(s.attributes), [["__proto__", "p"], ["constructor", "c"]]);
    assert.deepEqual(Object.entries(s.recipientLimits), [["__proto__", 0], ["toString", 2]]);
    const bare = parseSend({ recipient: "r", channel: "sms", messageId: "m" }, rules);
    for (const name of ["constructor", "toString", "hasOwnProperty", "valueOf", "__proto__"]) {
      assert.equal(bare.attributes[name], undefined, name);
      assert.equal(bare.recipientLimits[name], undefined, name);
    }
  });

  it("accepts numeric ids and attribute values as strings", () => {
    const s = parseSend({ recipient: "r", channel: "sms", messageId: 12, attributes: { campaign_id: 9 } }, rules);
    assert.equal(s.messageId, "12");
    assert.equal(s.attributes.campaign_id, "9");
  });
});

describe("core/send: timezone and expiresAt", () => {
  const base = { recipient: "r", channel: "sms", messageId: "m" };
  const rules = { channels: DEFAULT_CHANNELS, defaultOrg: "d", requireTier: false };
  it("accepts a real zone and epoch ms or ISO expiry", () => {
    const s = parseSend({ ...base, timezone: "Asia/Kathmandu", expiresAt: "2026-12-01T00:00:00Z" }, rules);
    assert.equal(s.timezone, "Asia/Kathmandu");
    assert.equal(s.expiresAt, Date.UTC(2026, 11, 1));
    assert.equal(parseSend({ ...base, expiresAt: 1_800_000_000_000 }, rules).expiresAt, 1_800_000_000_000);
    assert.equal(parseSend({ ...base, expiresAt: "1800000000000" }, rules).expiresAt, 1_800_000_000_000);
  });
  it("names an unknown zone and a bad expiry", () => {
    assert.throws(() => parseSend({ ...base, timezone: "Mars/Olympus" }, rules), /timezone: unknown time zone "Mars\/Olympus"/);
    assert.throws(() => parseSend({ ...base, expiresAt: "tomorrow-ish" }, rules), /expiresAt: must be epoch ms or an ISO time/);
  });
});
