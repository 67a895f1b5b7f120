import assert from "node:assert/strict";
import type { Msg } from "../support/nodeRed";
import { helperSuite } from "../support/helperSuite";
import { admissionOf, ExampleRun } from "../support/exampleRun";
import { readExample } from "../support/exampleFlow";

/**
 * examples/throughput.json as shipped, its steps pressed one after the other
 * as its comments ①–④ say, asserting on what leaves its debug nodes and when.
 */
const flow = readExample("throughput.json");

const reasons = (list: Msg[]) => [...new Set(list.map((m) => admissionOf(m).reason))];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("examples/throughput.json", function () {
  this.timeout(30_000);
  helperSuite();

  it("①–④: the skip gate passes the burst and refuses the rest with the wait; the queue gate paces, and drops or sends what it holds on reset and flush", async () => {
    const run = await ExampleRun.load(flow);
    const queued = run.of("queue: allowed");
    const reset = run.of("queue: skipped (reset)");

    await run.press("30 SMS for acme → skip", { outputs: 30 });
    assert.equal(run.of("skip: allowed").length, 10, "① the burst of 10 goes");
    const skipped = run.of("skip: skipped");
    assert.equal(skipped.length, 20);
    assert.deepEqual(reasons(skipped), ["throughput_exceeded"]);
    for (const m of skipped) {
      const wait = Number(admissionOf(m).retry_after_seconds);
      assert.ok(wait > 0 && wait <= 0.1, `① retry_after_seconds ${wait}: the next slot, 1/10 s away at most`);
    }

    const started = Date.now();
    await run.press("30 SMS for acme → queue", { outputs: 5 });
    await sleep(50);
    assert.equal(queued.length, 5, "② the burst of 5 goes at once, the rest is held");
    await run.until(() => queued.length === 30, "② all 30 left by allowed");
    const took = Date.now() - started;
    assert.ok(took >= 2_000 && took < 3_500, `② 25 held msgs at 10 a second: out in ${took} ms, not 2.5 s`);

    await run.press("30 SMS for acme → queue", { outputs: 1 });
    await run.press("reset acme's held SMS", { outputs: 0 });
    await run.until(() => queued.length + reset.length === 60, "③ every msg of the second burst left");
    assert.ok(reset.length > 0, "③ some were still held");
    assert.deepEqual(reasons(reset), ["reset"]);
    await sleep(300);
    assert.equal(queued.length + reset.length, 60, "③ the reset ones are gone: none leaves later");

    await run.press("30 SMS for acme → queue", { outputs: 1 });
    const flushed = Date.now();
    await run.press("flush acme's held SMS", { outputs: 0 });
    await run.until(() => queued.length === 60 - reset.length + 30, "④ every msg of the third burst left by allowed");
    assert.ok(Date.now() - flushed < 1_000, "④ flushed now, not paced");
    assert.equal(run.of("error").length, 0);
  });
});
