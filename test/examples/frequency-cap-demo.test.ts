import assert from "node:assert/strict";
import type { Msg } from "../support/nodeRed";
import { helperSuite } from "../support/helperSuite";
import { admissionOf, ExampleRun } from "../support/exampleRun";
import { readExample } from "../support/exampleFlow";

/**
 * examples/frequency-cap-demo.json as shipped, its steps pressed as its
 * comments ①–④ say, asserting on what leaves its debug nodes.
 */
const flow = readExample("frequency-cap-demo.json");

const capIds = (list: Msg[]) => list.map((m) => admissionOf(m).cap_id);

describe("examples/frequency-cap-demo.json", function () {
  this.timeout(30_000);
  helperSuite();

  it("①–④: marketing capped at 3, OTPs go until the backstop's 10, a P0 alert still goes, no recipient reaches the Catch", async () => {
    const run = await ExampleRun.load(flow);
    await run.press("marketing SMS to alice", { times: 4 });
    assert.equal(run.of("allowed").length, 3);
    assert.deepEqual(capIds(run.of("skipped")), ["marketing-sms"], "① the 4th, skipped by marketing-sms");
    assert.ok(Number(admissionOf(run.of("skipped")[0]).retry_after_seconds) > 0);

    await run.press("OTP SMS to alice", { times: 8 });
    assert.equal(run.of("allowed").length, 3 + 7, "② 7 OTPs go: the refused marketing SMS took no slot");
    assert.deepEqual(capIds(run.of("skipped")), ["marketing-sms", "backstop"], "② the 8th OTP, skipped by the backstop");

    await run.press("P0 alert to alice");
    assert.equal(run.of("allowed").length, 11);
    assert.equal(admissionOf(run.of("allowed").at(-1)).reason, "exempt", "③");

    await run.press("send without recipient");
    assert.match(String((run.of("error")[0]?.error as { message?: string }).message), /recipient/, "④");
    assert.equal(run.of("skipped").length, 2);
  });
});
