import assert from "node:assert/strict";
import { AdmissionMetrics } from "../../src/core/metrics/admissionMetrics";
import { RuleCacheStats } from "../../src/core/pgRules/ruleCache";
import { AdmissionFeed, FEED_TOPIC, type FeedMessage } from "../../src/nodes/admissionFeed";
import { sleep } from "../support/redis";

function metricsOf(id: string): AdmissionMetrics {
  const metrics = new AdmissionMetrics({ configId: id, store: "memory", rulesSource: "inline", failMode: "open", maxQueued: 0 });
  metrics.watch({
    storeState: () => "ready", rulesState: () => "ok", queueLength: () => 0, circuit: () => ({ state: "closed", opens: 0 }),
    held: async () => 0, ruleCache: new RuleCacheStats(),
  });
  return metrics;
}

describe("the Admission sidebar's feed (RED.comms)", () => {
  it("publishes a cap-config's counts retained, only when they changed, and clears its topic when it closes", () => {
    const sent: { topic: string; data: unknown; retain: boolean }[] = [];
    const feed = new AdmissionFeed((topic, data, retain) => sent.push({ topic, data, retain }), 60_000, () => 42);
    const metrics = metricsOf("cfg");
    const stop = feed.watch("cfg", "my caps", metrics);
    try {
      feed.flush();
      assert.equal(sent.length, 1, "the first state is sent");
      feed.flush();
      assert.equal(sent.length, 1, "nothing changed: nothing sent");
      metrics.gate("g", "frequency-cap-gate").leftBy("skipped", "frequency_capped");
      metrics.gate("g", "frequency-cap-gate").wouldRefuse("trial", undefined);
      feed.flush();
      assert.equal(sent.length, 2);
      const last = sent[1] as { topic: string; data: FeedMessage; retain: boolean };
      assert.equal(last.topic, `${FEED_TOPIC}/cfg`);
      assert.equal(last.retain, true, "an editor opened later gets it at once");
      assert.equal(last.data.at, 42);
      assert.deepEqual(last.data.config, { id: "cfg", name: "my caps", store: "memory", storeState: "ready", rulesState: "ok", queueLength: 0, maxQueued: 0, circuit: "closed", held: 0 });
      assert.deepEqual(last.data.gates[0]?.left, [{ output: "skipped", reason: "frequency_capped", count: 1 }]);
      assert.deepEqual(last.data.gates[0]?.shadow, [{ cap_id: "trial", org: "*", would_refuse: 1 }]);
      metrics.heldIs(3);
      feed.flush();
      assert.equal((sent[2]?.data as FeedMessage).config.held, 3, "a change of the send path's state is sent too");
    } finally {
      stop();
    }
    assert.deepEqual(sent.at(-1), { topic: `${FEED_TOPIC}/cfg`, data: null, retain: false });
  });

  it("sends on its own once a second while any cap-config is watched, and never lets the editor's comms fail a send", async () => {
    let sent = 0;
    const feed = new AdmissionFeed(() => { sent++; throw new Error("websocket gone"); }, 50);
    const metrics = metricsOf("a");
    const stop = feed.watch("a", "a", metrics);
    const counts = metrics.gate("g", "suppression-gate");
    for (let i = 0; i < 5; i++) {
      counts.leftBy("allowed", undefined);
      await sleep(70);
    }
    stop();
    assert.ok(sent >= 4 && sent <= 7, `sent ${sent} times`);
    const after = sent;
    await sleep(120);
    assert.equal(sent, after, "the timer stops with the last cap-config");
  });
});
