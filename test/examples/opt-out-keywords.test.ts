import assert from "node:assert/strict";
import { RunningExample, type Answer } from "./runningExample";

/**
 * examples/opt-out-keywords.json as a user imports it, in a real Node-RED:
 * inbound texts POSTed to its webhook as an SMS provider posts them
 * (form-encoded From and Body, as Twilio does), the promo inject pressed
 * after each, and what reaches the provider checked.
 */
const NUMBER = "+15551234567";
const TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>';

describe("examples/opt-out-keywords.json in a real Node-RED", function () {
  this.timeout(60_000);
  const example = new RunningExample("opt-out-keywords.json");
  before(() => example.start());
  after(() => example.stop());

  const text = (fields: Record<string, string>): Promise<Answer> =>
    example.post("/sms/inbound", new URLSearchParams({ To: "+15550000000", MessageSid: "SM0001", ...fields }).toString(), "application/x-www-form-urlencoded");
  /** Presses the promo button; what happened to it: the debug node it reached, and why when skipped. */
  const promo = async (): Promise<string> => {
    const before = example.debugNames().length;
    await example.press("promo SMS to +15551234567");
    const name = example.debugNames()[before];
    const msg = example.debug(name).at(-1) as { admission?: { reason?: string } };
    return name === "skipped" ? `skipped ${String(msg.admission?.reason)}` : name;
  };

  it("blocks the number on STOP: the webhook gets 200 and an empty TwiML reply, the next promo is skipped opted_out; START delivers again", async () => {
    assert.equal(await promo(), "delivered");
    const stop = await text({ From: NUMBER, Body: "STOP" });
    assert.equal(stop.status, 200);
    assert.match(String(stop.headers.get("content-type")), /^text\/xml/);
    assert.equal(stop.text, TWIML);
    // answered once the list changed: no waiting needed before the next send
    assert.equal(await promo(), "skipped opted_out");
    const skipped = example.debug("skipped").at(-1) as { recipient: string; admission: { suppression: { channel: string; reason: string } } };
    assert.equal(skipped.recipient, NUMBER);
    assert.deepEqual([skipped.admission.suppression.channel, skipped.admission.suppression.reason], ["sms", "SMS keyword STOP"]);

    const start = await text({ From: NUMBER, Body: "START" });
    assert.equal(start.status, 200);
    assert.equal(start.text, TWIML);
    assert.equal(await promo(), "delivered");
  });

  it("takes every opt-out and opt-in keyword as the whole text, in any case", async () => {
    const pairs: [string, string][] = [[" stop ", "start"], ["StopAll", "UNSTOP"], ["UNSUBSCRIBE", "yes"], ["cancel", "Start"], ["End", "unstop"], ["quit\n", " YES "]];
    const seen: string[] = [];
    for (const [out, back] of pairs) {
      assert.equal((await text({ From: NUMBER, Body: out })).status, 200);
      seen.push(await promo());
      assert.equal((await text({ From: NUMBER, Body: back })).status, 200);
      seen.push(await promo());
    }
    assert.deepEqual(seen, pairs.flatMap(() => ["skipped opted_out", "delivered"]));
  });

  it("changes nothing for any other text, and only the sender's own number", async () => {
    for (const body of ["stop please", "STOP STOP", "Hello", ""]) {
      const answer = await text({ From: NUMBER, Body: body });
      assert.deepEqual([answer.status, answer.text], [200, TWIML], JSON.stringify(body));
    }
    assert.equal(await promo(), "delivered");
    // another number's STOP blocks that number, not this one
    assert.equal((await text({ From: "+15557654321", Body: "STOP" })).status, 200);
    await example.untilBlocked(["+15557654321"]);
    assert.equal(await promo(), "delivered");
  });

  it("answers 400 naming the field for a keyword without a usable From", async () => {
    const noFrom = await text({ Body: "STOP" });
    assert.deepEqual([noFrom.status, noFrom.text], [400, "From: the sender's number is required"]);
    const tooLong = await text({ From: `+1${"5".repeat(1100)}`, Body: "STOP" });
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.text, /^recipient: must be at most 1024 bytes/);
    assert.doesNotMatch(tooLong.text, /Error\b/);
    assert.equal(await promo(), "delivered");
    assert.doesNotMatch(example.red.output, /\[error\]/, example.red.output);
  });
});
