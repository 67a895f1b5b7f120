import assert from "node:assert/strict";
import { AdmissionMetrics } from "../../src/core/metrics/admissionMetrics";
import { RuleCacheStats } from "../../src/core/rules/ruleCache";
import { AdmissionFeed, FEED_TOPIC, type ConfigFeedMessage, type GateFeedMessage } from "../../src/nodes/sidebar/admissionFeed";
import { sleep } from "../support/redis";

function metricsOf(id: string, state = { queue: 0 }): AdmissionMetrics {
  const metrics = new AdmissionMetrics({ configId: id, store: "memory", rulesSource: "inline", failMode: "open", maxQueued: 0 });
  metrics.watch({
    storeState: () => "ready", rulesState: () => "ok", queueLength: () => state.queue, circuit: () => ({ state: "closed", opens: 0 }),
    held: async () => new Map(), ruleCache: new RuleCacheStats(),
  });
  return metrics;
}

type Sent = { topic: string; data: unknown; retain: boolean };

describe("the Admission sidebar's feed (RED.comms)", () => {
  it("publishes retained, only what changed: a gate when its counts did, the cap-config when its state did; clears what goes", () => {
    const sent: Sent[] = [];
    const feed = new AdmissionFeed((topic, data, retain) => sent.push({ topic, data, retain }), 60_000, () => 42);
    const state = { queue: 0 };
    const metrics = metricsOf("cfg", state);
    const stop = feed.watch("cfg", "my caps", metrics);
    const topics = (from: number) => sent.slice(from).map((s) => s.topic);
    try {
      feed.flush();
      assert.deepEqual(topics(0), [`${FEED_TOPIC}/cfg`], "the send path's state first; no gate has counted yet");
      const config = sent[0]?.data as ConfigFeedMessage;
      assert.equal(sent[0]?.retain, true, "an editor opened later gets it at once");
      assert.deepEqual(config.config, { id: "cfg", name: "my caps", store: "memory", storeState: "ready", rulesState: "ok", queueLength: 0, maxQueued: 0, circuit: "closed", held: 0 });
      assert.equal(config.at, 42);

      const a = metrics.gate("a", "frequency-cap-gate");
      const b = metrics.gate("b", "suppression-gate");
      a.leftBy("skipped", "frequency_capped");
      a.wouldRefuse("trial", undefined);
      b.leftBy("allowed", undefined);
      feed.flush();
      assert.deepEqual(topics(1), [`${FEED_TOPIC}/cfg/a`, `${FEED_TOPIC}/cfg/b`]);
      const gateA = (sent[1]?.data as GateFeedMessage).gate;
      assert.deepEqual(gateA.left, [{ output: "skipped", reason: "frequency_capped", count: 1 }]);
      assert.deepEqual(gateA.shadow, [{ cap_id: "trial", org: "*", would_refuse: 1 }]);

      feed.flush();
      assert.equal(sent.length, 3, "nothing changed: nothing sent");
      b.leftBy("allowed", undefined);
      feed.flush();
      assert.deepEqual(topics(3), [`${FEED_TOPIC}/cfg/b`], "only the gate that counted");
      state.queue = 7;
      feed.flush();
      assert.deepEqual(topics(4), [`${FEED_TOPIC}/cfg`], "the send path's state changed");
      assert.equal((sent[4]?.data as ConfigFeedMessage).config.queueLength, 7);
      b.holding(2);
      feed.flush();
      assert.deepEqual(topics(5), [`${FEED_TOPIC}/cfg`, `${FEED_TOPIC}/cfg/b`], "a gate holding msgs: its count and the cap-config's total");
      assert.equal((sent[5]?.data as ConfigFeedMessage).config.held, 2);
      assert.equal((sent[6]?.data as GateFeedMessage).gate.heldNow, 2);

      metrics.forget("a");
      feed.flush();
      assert.deepEqual(sent.slice(7), [{ topic: `${FEED_TOPIC}/cfg/a`, data: null, retain: false }], "a removed gate's topic is cleared");
    } finally {
      stop();
    }
    assert.deepEqual(sent.slice(8), [
      { topic: `${FEED_TOPIC}/cfg/b`, data: null, retain: false },
      { topic: `${FEED_TOPIC}/cfg`, data: null, retain: false },
    ], "a closed cap-config clears all its topics");
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
    // the config once, the gate each round it counted, and both cleared at the end
    assert.ok(sent >= 5 && sent <= 10, `sent ${sent} times`);
    const after = sent;
    await sleep(120);
    assert.equal(sent, after, "the timer stops with the last cap-config");
  });
});
