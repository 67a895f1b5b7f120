import fc from "fast-check";

/** Strings people and attackers put in fields: unicode, lone surrogates, key syntax, prototype names, long ones. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.constantFrom("", " ", "__proto__", "constructor", "toString", "hasOwnProperty", "prototype", "{", "}", "{a}", ":", "|", "a|b", "b|c",
    "%", "%25", "%u0025", "#", "\uD800", "\uDFFF", "\u0000", "😀", "*", "!", "fc:{x}:c", "a:b", "\\", "\"", "\n"),
  fc.string({ unit: "binary-ascii", minLength: 1000, maxLength: 1100 }),
);

/** Anything JSON (and a few things JSON has not) where a string belongs. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.array(hostileString, { maxLength: 3 }),
  fc.dictionary(hostileString, hostileString, { maxKeys: 3 }),
  fc.constant(Number.NaN),
  fc.constant(Number.POSITIVE_INFINITY),
);

/** A raw send as a flow could hand a gate: every field hostile, often well-formed. */
export const rawSend = fc.record({
  recipient: fc.oneof(hostileString, hostileValue),
  channel: fc.oneof(fc.constantFrom("sms", "email", "push"), hostileValue),
  category: fc.option(fc.oneof(hostileString, hostileValue), { nil: undefined }),
  tier: fc.option(fc.oneof(fc.constantFrom("P0", "P1"), hostileValue), { nil: undefined }),
  messageId: fc.oneof(hostileString, hostileValue),
  org: fc.option(fc.oneof(hostileString, hostileValue), { nil: undefined }),
  attributes: fc.option(fc.oneof(fc.dictionary(hostileString, fc.oneof(hostileString, hostileValue), { maxKeys: 4 }), hostileValue), { nil: undefined }),
  recipientLimits: fc.option(fc.oneof(fc.dictionary(hostileString, fc.oneof(fc.nat(10), hostileValue), { maxKeys: 3 }), hostileValue), { nil: undefined }),
  timezone: fc.option(fc.oneof(fc.constantFrom("Europe/London", "Asia/Kathmandu"), hostileValue), { nil: undefined }),
  expiresAt: fc.option(hostileValue, { nil: undefined }),
});
