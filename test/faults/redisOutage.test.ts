import assert from "node:assert/strict";
import { helper, type Msg, reasonOf } from "../support/nodeRed";
import { deployGateFlow, type GateFlow } from "../support/gateFlow";
import { sleep, uniquePrefix } from "../support/redis";
import { OwnRedis } from "../support/redisServer";

const STREAM = 10_000;
const RULES = [{ id: "ten", scope: "global", max_count: 10, window_seconds: 600 }];

/**
 * 10,000 msgs over ~6 s (40 every 25 ms, 2,000 recipients); `during` starts
 * after the first quarter, while the stream goes on. Resolves with each msg's
 * send time once every msg has left somewhere.
 */
async function stream(flow: GateFlow, during: () => Promise<void>): Promise<number[]> {
  const sentAt: number[] = [];
  let outage: Promise<void> | undefined;
  for (let i = 0; i < STREAM; i += 40) {
    for (let j = i; j < i + 40; j++) {
      sentAt[j] = Date.now();
      flow.send({ recipient: `r${j % 2000}`, channel: "sms", messageId: `m${j}`, payload: { n: j } });
    }
    if (i >= STREAM / 4 && !outage) outage = during();
    await sleep(25);
  }
  await outage;
  await flow.out.until(STREAM, 60_000);
  return sentAt;
}

function assertEachOnce(flow: GateFlow): void {
  const ids = flow.out.sequence.map((s) => String(s.msg.messageId));
  assert.equal(ids.length, STREAM, "every msg left by an output");
  assert.equal(new Set(ids).size, STREAM, "none twice");
}

describe("Redis dies in the middle of a stream of 10,000 msgs (kill -9, back after 2 s)", function () {
  this.timeout(120_000);
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());

  for (const failMode of ["open", "closed"] as const) {
    it(`fail ${failMode}: nothing lost or stuck, and the gate recovers by itself within 1 s of Redis returning`, async () => {
      const own = new OwnRedis();
      await own.start();
      try {
        const flow = await deployGateFlow({ store: "redis", config: { redisUrl: own.url, keyPrefix: uniquePrefix(`outage-${failMode}`), failMode }, rules: RULES });
        let back = 0;
        const sentAt = await stream(flow, async () => {
          await own.stop();
          await sleep(2000);
          await own.start();
          back = Date.now();
        });
        assertEachOnce(flow);
        const failed = (id: string, m: Msg) => id === "caught" || reasonOf(m) === "fail_open";
        if (failMode === "open") {
          assert.ok(flow.out.of("allowed").some((m) => reasonOf(m) === "fail_open"), "the outage failed some msgs open");
          assert.equal(flow.out.of("caught").length, 0);
        } else {
          const caught = flow.out.of("caught");
          assert.ok(caught.length > 0, "the outage sent msgs to Catch");
          for (const m of caught) {
            assert.equal(m.admission, undefined, "intact: no verdict written");
            assert.deepEqual(m.payload, { n: Number(String(m.messageId).slice(1)) }, "intact: payload as sent");
          }
          assert.equal(flow.out.of("allowed").filter((m) => reasonOf(m) === "fail_open").length, 0);
        }
        // recovery by itself: every msg sent a second or more after Redis was back was answered by Redis
        const index = (m: Msg) => Number(String(m.messageId).slice(1));
        const late = flow.out.sequence.filter(({ msg }) => (sentAt[index(msg)]) >= back + 1000);
        assert.ok(late.length > 500, `msgs sent after recovery: ${late.length}`);
        const lateFailures = late.filter(({ id, msg }) => failed(id, msg));
        assert.equal(lateFailures.length, 0, `${lateFailures.length} msgs sent ≥ 1 s after Redis returned still failed`);
        // recovery: the first msg sent after Redis returned that Redis answered again, and the last that still failed
        const afterBack = flow.out.sequence.filter(({ msg }) => (sentAt[index(msg)]) >= back).sort((a, b) => index(a.msg) - index(b.msg));
        const lastFailure = afterBack.filter(({ id, msg }) => failed(id, msg)).at(-1);
        const recoveredMs = lastFailure ? (sentAt[index(lastFailure.msg)]) - back : 0;
        const ids = flow.out.sequence.map((x) => String(x.msg.messageId));
        const outageFailures = flow.out.sequence.filter(({ id, msg }) => failed(id, msg)).length;
        console.log(`      Redis kill -9 mid-stream, fail ${failMode}: sent ${STREAM}, left ${ids.length}, lost ${STREAM - new Set(ids).size}, stuck 0, twice ${ids.length - new Set(ids).size}, ${failMode === "open" ? "failed open" : "to Catch intact"} ${outageFailures}; last failure sent ${recoveredMs} ms after Redis returned`);
      } finally {
        await own.stop();
        own.cleanUp();
      }
    });
  }
});
