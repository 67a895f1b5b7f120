import assert from "node:assert/strict";
import { helper } from "../support/nodeRed";
import { deployGateFlow } from "../support/gateFlow";
import { sleep, uniquePrefix } from "../support/redis";
import { OwnRedis } from "../support/redisServer";

const RECIPIENTS = 300;
/** msgs per recipient: the first is allowed, the others are held until its window ends */
const PER_RECIPIENT = 4;
const WINDOW_S = 3;

describe("held msgs survive a kill -9 of a Redis that keeps AOF (appendfsync always)", function () {
  this.timeout(60_000);
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());

  it("releases each held msg exactly once when Redis dies in the middle of the releases and comes back on its dir", async () => {
    const own = new OwnRedis(0, ["--appendonly", "yes", "--appendfsync", "always"]);
    await own.start();
    try {
      const flow = await deployGateFlow({
        store: "redis", config: { redisUrl: own.url, keyPrefix: uniquePrefix("aof"), timeoutMs: 2000, failMode: "closed" },
        gate: { deferMax: 600 },
        rules: [{ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: WINDOW_S, disposition: "defer" }],
      });
      const started = Date.now();
      // round k sends every recipient's k-th msg, 50 at a time: rounds 1..3 are held, due about WINDOW_S after round 0
      for (let k = 0; k < PER_RECIPIENT; k++) {
        for (let from = 0; from < RECIPIENTS; from += 50) {
          for (let r = from; r < from + 50; r++) flow.send({ recipient: `r${r}`, channel: "sms", messageId: `r${r}-${k}`, payload: { r, k } });
          await sleep(40);
        }
      }
      const total = RECIPIENTS * PER_RECIPIENT;
      const held = total - RECIPIENTS;
      // every msg was answered (allowed or held) before the kill: the queue holds them all
      for (let i = 0; i < 200 && flow.out.of("allowed").length < RECIPIENTS; i++) await sleep(25);
      assert.equal(flow.out.of("allowed").length, RECIPIENTS, "each recipient's first msg was allowed");

      // kill -9 once releases are under way (a third of the held msgs out), back after 1.5 s on the same port and dir
      while (flow.out.of("deferred").length < held / 3) {
        assert.ok(Date.now() - started < 20_000, "releases began");
        await sleep(5);
      }
      await own.stop();
      const releasedAtKill = flow.out.of("deferred").length;
      await sleep(1500);
      await own.start();
      const back = Date.now();

      await flow.out.until(total, 30_000);
      const recoveredMs = Date.now() - back;
      await sleep(1500); // anything released a second time would show by now (acks are retried, leases are 30 s)
      const released = flow.out.of("deferred").map((m) => String(m.messageId));
      const unique = new Set(released);
      const expected = new Set(Array.from({ length: RECIPIENTS }, (_, r) => Array.from({ length: PER_RECIPIENT - 1 }, (_, k) => `r${r}-${k + 1}`)).flat());
      const lost = [...expected].filter((id) => !unique.has(id));
      const twice = released.length - unique.size;
      console.log(`      held msgs, AOF Redis kill -9 mid-release: sent ${total}, held ${held}, released ${released.length} (${releasedAtKill} before the kill), lost ${lost.length}, twice ${twice}, to Catch ${flow.out.of("caught").length}; all released ${recoveredMs} ms after Redis returned`);
      assert.ok(releasedAtKill < held, "the kill came before every held msg was out");
      assert.deepEqual(lost.slice(0, 5), [], `${lost.length} held msgs lost`);
      assert.equal(twice, 0, "no held msg released twice");
      assert.equal(flow.out.of("caught").length, 0);
      assert.equal(flow.out.total(), total, "nothing else left the gate");
      for (const m of flow.out.of("deferred")) assert.deepEqual(m.payload, { r: Number(String(m.messageId).slice(1).split("-")[0]), k: Number(String(m.messageId).split("-")[1]) }, "released intact");
    } finally {
      await own.stop();
      own.cleanUp();
    }
  });
});
