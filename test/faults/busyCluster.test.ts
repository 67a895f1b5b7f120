import assert from "node:assert/strict";
import Redis from "ioredis";
import type { Node, NodeMessage } from "node-red";
import { flowNode, gateNodes, helper, TAB, type Msg } from "../support/nodeRed";
import type { CapConfigNode } from "../../src/nodes/gate/capConfigNode";
import quietHoursGate from "../../src/nodes/quietHoursGate";
import throughputGate from "../../src/nodes/throughputGate";
import { sleep, uniquePrefix } from "../support/redis";
import { clusterHelperSuite } from "../support/clusterHelperSuite";
import type { OwnRedisCluster } from "../support/redisServer";

const MSGS = 100_000;
/** each recipient twice: a cap of 1 allows the first and skips the second */
const RECIPIENTS = MSGS / 2;
const OUTPUTS = ["sent", "skipped", "deferred", "caught"] as const;

/** Redis logs each command that ran longer than this (SLOWLOG): a failure says whether the servers themselves stalled */
const SLOW_US = 20_000;

/** The masters' slowest commands since their SLOWLOG was reset, ms, slowest first. */
async function slowest(cluster: OwnRedisCluster, reset = false): Promise<number[]> {
  const took: number[] = [];
  for (const node of cluster.nodes) {
    const client = new Redis({ port: node.port, host: "127.0.0.1" });
    if (reset) {
      await client.config("SET", "slowlog-log-slower-than", String(SLOW_US));
      await client.slowlog("RESET");
    } else {
      for (const entry of (await client.slowlog("GET", 128)) as [number, number, number][]) took.push(Math.round(entry[2] / 1000));
    }
    await client.quit();
  }
  return took.sort((a, b) => b - a);
}

interface Trail {
  gate: string;
  status: string;
  reason?: string;
}

/**
 * "A batch's timeout must not fail a healthy store that is merely busy"
 * (SPEC §9): a burst far larger than the send queue's batches keeps every
 * master of a 3-master cluster busy, and this Node process too, for the whole
 * drain. With the default timeoutMs (50) no store call may fail for it: for
 * suppression, failing open would text someone who said STOP. What it cannot
 * hold off is a box so loaded that Redis itself sits off the CPU for longer
 * than the timeout while this process waits (its own SLOWLOG then shows
 * commands of 90-250 ms): a failure lists Redis's slowest commands, to tell
 * that from a timeout of a store that was answering.
 */
describe("a 100,000-msg burst through suppression → frequency cap → quiet hours → throughput on a 3-master Redis Cluster, default settings", function () {
  // the drain takes ~1-2 min on the 2-core development box while other suites run beside it
  this.timeout(900_000);
  const cluster = clusterHelperSuite();

  // with the deploy: the calls wait for the cluster's first connection; after it: the masters' own connections open
  // under the burst's first calls (ioredis opens one at the first call to its master)
  for (const when of ["arriving with the deploy", "arriving once the cap-config is connected"] as const) {
  it(`${when}: fails none open at any gate, each msg leaving exactly once, the cap exact`, async () => {
    await slowest(cluster, true);
    await helper.load([...gateNodes, quietHoursGate, throughputGate], [
      TAB,
      // default timeoutMs, maxQueued, failMode: only the store and the caps are set
      { id: "cfg", type: "cap-config", store: "redis-cluster", redisNodes: cluster.seeds, keyPrefix: uniquePrefix("busy-cluster"), rules: [{ id: "one", scope: "global", max_count: 1, window_seconds: 600 }] },
      flowNode({ id: "sup", type: "suppression-gate", config: "cfg", wires: [["cap"], ["skipped"]] }),
      flowNode({ id: "cap", type: "frequency-cap-gate", config: "cfg", wires: [["quiet"], ["skipped"], ["deferred"]] }),
      // never quiet: every msg the cap allows reaches the throughput-gate
      flowNode({ id: "quiet", type: "quiet-hours-gate", config: "cfg", timezone: "UTC", days: [], disposition: "skip", wires: [["tp"], ["skipped"], ["deferred"]] }),
      // a ceiling the burst stays under: each msg still reserves its instant in the store
      flowNode({ id: "tp", type: "throughput-gate", config: "cfg", rate: 1_000_000, burst: 1_000_000, disposition: "skip", wires: [["sent"], ["skipped"], ["deferred"]] }),
      ...OUTPUTS.map((id) => flowNode({ id, type: "helper" })),
      flowNode({ id: "catch", type: "catch", scope: null, wires: [["caught"]] }),
    ]);
    // counted as they leave, not kept: a burst of msgs with their verdicts would hold a few hundred MB
    const times = new Uint8Array(MSGS);
    const by = new Map<string, number>(OUTPUTS.map((id) => [id, 0]));
    const reasons = new Map<string, number>();
    let left = 0;
    let firstCaught: string | undefined;
    for (const id of OUTPUTS) {
      (helper.getNode(id) as Node).on("input", (raw: NodeMessage) => {
        const msg = raw as Msg;
        left++;
        by.set(id, (by.get(id) ?? 0) + 1);
        const i = Number(String(msg.messageId).slice(1));
        times[i] = times[i] + 1;
        if (id === "caught") firstCaught ??= String((msg.error as { message?: string } | undefined)?.message);
        for (const step of ((msg.admission as { trail?: Trail[] } | undefined)?.trail ?? [])) {
          if (step.reason !== undefined) reasons.set(`${step.gate}:${step.reason}`, (reasons.get(`${step.gate}:${step.reason}`) ?? 0) + 1);
        }
      });
    }
    if (when === "arriving once the cap-config is connected") {
      const store = (helper.getNode("cfg") as CapConfigNode).service?.store;
      for (let i = 0; i < 200 && store?.state() !== "ready"; i++) await sleep(10);
      assert.equal(store?.state(), "ready");
    }
    const started = Date.now();
    const sup = helper.getNode("sup") as Node;
    // one tick, as a split node hands over a list
    for (let i = 0; i < MSGS; i++) sup.receive({ recipient: `user-${i % RECIPIENTS}`, channel: "sms", messageId: `m${i}`, payload: { n: i } });
    while (left < MSGS && Date.now() - started < 840_000) await new Promise((resolve) => setTimeout(resolve, 50));
    const seconds = (Date.now() - started) / 1000;
    const failedOpen = [...reasons].filter(([key]) => key.endsWith(":fail_open") || key.endsWith(":circuit_open")).reduce((n, [, count]) => n + count, 0);
    // a command that ran longer than the timeout in Redis itself: the server was off the CPU (other work on the box)
    const stalls = (await slowest(cluster)).slice(0, 5);
    console.log(`      ${MSGS.toLocaleString("en-US")} msgs ${when}, through 4 gates on a 3-master cluster in ${seconds.toFixed(1)} s: ${[...by].map(([id, n]) => `${id} ${n}`).join(", ")}; reasons ${[...reasons].map(([k, n]) => `${k} ${n}`).join(", ")}; Redis's slowest commands ${stalls.length > 0 ? stalls.join(", ") : `all under ${SLOW_US / 1000}`} ms`);

    assert.equal(failedOpen, 0, `${failedOpen} store calls failed open: ${[...reasons].map(([k, n]) => `${k} ${n}`).join(", ")}; Redis's own slowest commands meanwhile: ${stalls.join(", ") || "none"} ms`);
    assert.equal(by.get("caught"), 0, `caught: ${String(firstCaught)}`);
    assert.equal(left, MSGS, "every msg left");
    const notOnce = times.reduce((n, t) => n + (t === 1 ? 0 : 1), 0);
    assert.equal(notOnce, 0, `${notOnce} msgs did not leave exactly once`);
    assert.equal(by.get("sent"), RECIPIENTS, "each recipient's first send passed every gate");
    assert.equal(by.get("skipped"), RECIPIENTS, "each recipient's second send was capped");
    assert.equal(reasons.get("frequency-cap-gate:frequency_capped"), RECIPIENTS);
  });
  }
});
