import assert from "node:assert/strict";
import { nodeNamed, readExample } from "../support/exampleFlow";
import { RunningExample } from "./runningExample";

/**
 * examples/direct-api-send.json as a user imports it, in a real Node-RED:
 * sends POSTed to /send, answers and deliveries checked. The sends use
 * category otp, which the example's quiet hours exempt, so what the test sees
 * does not depend on the hour it runs (a marketing send at night is held, and
 * a held send gives its cap slots back until it is released).
 */
interface Accepted { status: string; message_id: string; remaining: number }
interface Refused { error: string; details: Record<string, unknown> }

describe("examples/direct-api-send.json in a real Node-RED", function () {
  this.timeout(60_000);
  const example = new RunningExample("direct-api-send.json");
  before(() => example.start());
  after(() => example.stop());

  /** message_id of every 202, in order */
  const accepted: string[] = [];
  const post = async (body: Record<string, unknown>) => {
    const answer = await example.postJson("/send", body);
    if (answer.status === 202) accepted.push(String(answer.json.message_id));
    return answer;
  };
  let n = 0;
  /** A send with a body of its own (the same body twice would be a duplicate). */
  const send = (fields: Record<string, unknown>) => post({ channel: "sms", category: "otp", body: `Your code is ${++n}`, ...fields });
  /** What reached the provider for these recipients, once each of them has had `each` deliveries. */
  const deliveredTo = async (recipients: readonly string[], each = 1) => {
    const mine = () => example.debug("delivered").filter((m) => recipients.includes(String(m.recipient)));
    for (let t = 0; t < 500 && mine().length < recipients.length * each; t++) await new Promise((r) => setTimeout(r, 20));
    return mine();
  };

  it("answers 202 five times, then 429 FREQUENCY_CAP_EXCEEDED with the cap's details and Retry-After; the provider gets the five", async () => {
    const answers: Accepted[] = [];
    for (let i = 0; i < 5; i++) {
      const answer = await send({ recipient: "alice" });
      assert.equal(answer.status, 202, answer.text);
      answers.push(answer.json as unknown as Accepted);
    }
    assert.deepEqual(answers.map((a) => [a.status, a.remaining]), [["accepted", 4], ["accepted", 3], ["accepted", 2], ["accepted", 1], ["accepted", 0]]);

    const refused = await send({ recipient: "alice" });
    assert.equal(refused.status, 429);
    const body = refused.json as unknown as Refused;
    assert.equal(body.error, "FREQUENCY_CAP_EXCEEDED");
    const retry = body.details.retry_after_seconds as number;
    assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `retry_after_seconds ${retry}`);
    assert.deepEqual(body.details, { cap_id: "any-5-a-minute", retry_after_seconds: retry, channel: "sms", window_seconds: 60, max_count: 5 });
    assert.equal(refused.headers.get("retry-after"), String(retry));

    const out = await deliveredTo(["alice"], 5);
    assert.deepEqual(out.map((m) => (m.provider as { id: string }).id), answers.map((a) => `prov-${a.message_id}`));
    assert.equal(example.debug("after 202: skipped").length, 0);
  });

  it("answers 400 with a message naming the field, without Node-RED's error class name", async () => {
    const bad = async (body: unknown) => {
      const answer = await example.postJson("/send", body);
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.json.error, "INVALID_SEND");
      const message = String(answer.json.message);
      assert.doesNotMatch(message, /Error\b/, message);
      return message;
    };
    assert.match(await bad({ channel: "sms", body: "hi" }), /^recipient: is required/);
    assert.match(await bad({ recipient: "bob", channel: "fax", body: "hi" }), /^channel: unknown channel "fax"/);
    assert.match(await bad({ recipient: "bob", channel: "sms" }), /^body: is required/);
    assert.match(await bad({ recipient: 42, channel: "sms", body: "hi" }), /^recipient: must be a string/);
    assert.match(await bad(["not", "an", "object"]), /^body: is required/);
    const text = await example.post("/send", "recipient=bob&channel=sms", "text/plain");
    assert.equal(text.status, 400);
  });

  it("answers a body that is not JSON with the same 400 JSON shape, not Node-RED's HTML error page", async () => {
    const notJson = async (body: string, contentType: string) => {
      const answer = await example.post("/send", body, contentType);
      assert.equal(answer.status, 400, answer.text);
      assert.match(answer.headers.get("content-type") ?? "", /^application\/json/, answer.text);
      const json = JSON.parse(answer.text) as { error: string; message: string };
      assert.equal(json.error, "INVALID_SEND", answer.text);
      return json.message;
    };
    assert.match(await notJson("{ recipient: alice", "application/json"), /^request: must be a JSON object \{ recipient, channel, category, body \}/);
    assert.match(await notJson("recipient=bob&channel=sms&body=hi", "application/x-www-form-urlencoded"), /^request: must be a JSON object/);
    assert.match(await notJson("hello", "text/plain"), /^request: must be a JSON object/);
    // JSON sent as text is still JSON
    const plain = await example.post("/send", JSON.stringify({ recipient: "hal", channel: "sms", category: "otp", body: "Your code is 1" }), "text/plain");
    assert.equal(plain.status, 202, plain.text);
    accepted.push(String((JSON.parse(plain.text) as { message_id: string }).message_id));
  });

  it("takes nothing but recipient, channel, category and body from the caller: a messageId, tier, org or limits of its own get nobody past the cap", async () => {
    const tries = async (fields: Record<string, unknown>) => {
      const answers: string[] = [];
      for (let i = 0; i < 7; i++) {
        const answer = await send(fields);
        answers.push(answer.status === 202 ? "202" : `${answer.status} ${String(answer.json.error)}`);
      }
      return answers;
    };
    const capped = ["202", "202", "202", "202", "202", "429 FREQUENCY_CAP_EXCEEDED", "429 FREQUENCY_CAP_EXCEEDED"];
    // a fixed messageId would make every send a retry that never takes a slot
    assert.deepEqual(await tries({ recipient: "carl", messageId: "always-the-same" }), capped);
    // tier P0 is exempt from caps
    assert.deepEqual(await tries({ recipient: "dave", tier: "P0" }), capped);
    // another org would be a tenant with empty counters
    const orgs: string[] = [];
    for (let i = 0; i < 7; i++) {
      const answer = await send({ recipient: "erin", org: `org-${i}` });
      orgs.push(answer.status === 202 ? "202" : `${answer.status} ${String(answer.json.error)}`);
    }
    assert.deepEqual(orgs, capped);
    // attributes and recipientLimits only ever split or lower a cap: not the caller's either
    assert.deepEqual(await tries({ recipient: "frank", attributes: { campaign: "x" }, recipientLimits: { "any-5-a-minute": 1 } }), capped);
  });

  it("refuses the same body to the same recipient as 409 DUPLICATE_CONTENT: a retry of the same text is not what the caller wants", async () => {
    const body = { recipient: "gina", channel: "sms", category: "otp", body: "Your parcel is at the door" };
    assert.equal((await post(body)).status, 202);
    const again = await post(body);
    assert.equal(again.status, 409);
    assert.equal(again.json.error, "DUPLICATE_CONTENT");
    assert.equal(again.headers.get("retry-after"), null);
  });

  it("answers 403 RECIPIENT_OPTED_OUT once carol texted STOP (no Retry-After: waiting will not help), and 202 once she opted back in", async () => {
    assert.equal((await send({ recipient: "carol" })).status, 202);
    await example.press("carol texts STOP", false);
    await example.untilBlocked(["carol"]);
    const refused = await send({ recipient: "carol" });
    assert.equal(refused.status, 403);
    const body = refused.json as unknown as Refused;
    assert.equal(body.error, "RECIPIENT_OPTED_OUT");
    assert.equal((body.details.suppression as { reason: string }).reason, "texted STOP");
    assert.equal(refused.headers.get("retry-after"), null);
    await example.press("carol opts back in", false);
    await example.untilBlocked([]);
    assert.equal((await send({ recipient: "carol" })).status, 202);
  });

  it("answers a burst over the provider's 10 a second at once, and the queue delivers every send after the reply", async () => {
    const burst = Array.from({ length: 25 }, (_, i) => `burst-${i}`);
    const answers = await Promise.all(burst.map((recipient) => send({ recipient })));
    assert.deepEqual(answers.map((a) => a.status), burst.map(() => 202));
    const out = await deliveredTo(burst);
    assert.deepEqual(out.map((m) => String(m.recipient)).sort(), [...burst].sort());
  });

  it("delivers every accepted send exactly once, and answers none of them twice", async () => {
    const provider = () => example.debug("delivered").map((m) => (m.provider as { id: string }).id);
    for (let t = 0; t < 500 && provider().length < accepted.length; t++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(accepted.length, 5 + 1 + 20 + 1 + 2 + 25);
    assert.deepEqual(provider().sort(), accepted.map((id) => `prov-${id}`).sort());
    assert.deepEqual(example.debugNames().filter((name) => name !== "delivered"), [], "nothing skipped or failed after its 202");
    // a queued send reached the provider without its HTTP request, and nothing tried to answer it again
    assert.doesNotMatch(example.red.output, /\[error\]/, example.red.output);
  });

  it("wires every deferred output back to the chain's entry, so a released send is checked by every gate again", () => {
    const flow = readExample("direct-api-send.json");
    const entry = nodeNamed(flow, "suppression-gate", "opted out? duplicate?").id;
    // the throughput-gate has no deferred output: it holds a msg itself and sends it by allowed at its instant
    const holding = flow.filter((n) => ["frequency-cap-gate", "quiet-hours-gate"].includes(n.type));
    assert.equal(holding.length, 2);
    for (const gate of holding) assert.deepEqual(gate.wires?.[2], [entry], `${gate.type}'s deferred output`);
  });
});
