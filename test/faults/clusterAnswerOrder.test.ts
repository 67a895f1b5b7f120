import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import calculateSlot from "cluster-key-slot";
import { heldMsgId } from "../../src/core/hold/heldIds";
import { deployGateFlow } from "../support/gateFlow";
import { helper } from "../support/nodeRed";
import { clusterHelperSuite } from "../support/clusterHelperSuite";
import { sleep, uniquePrefix } from "../support/redis";

const run = promisify(execFile);

/** The port of the master that serves each slot range. */
async function mastersBySlot(port: number): Promise<(slot: number) => number> {
  const { stdout } = await run("redis-cli", ["-p", String(port), "--json", "cluster", "slots"]);
  const ranges = (JSON.parse(stdout) as [number, number, [string, number]][]).map(([from, to, master]) => ({ from, to, port: master[1] }));
  return (slot) => {
    const range = ranges.find((r) => slot >= r.from && slot <= r.to);
    assert.ok(range, `slot ${slot} is served`);
    return range.port;
  };
}

/** A recipient whose counter hash lies on the master at `port`. */
function recipientOn(masterOf: (slot: number) => number, port: number, label: string): string {
  for (let i = 0; ; i++) {
    const recipient = `${label}${i}`;
    if (masterOf(calculateSlot(`{default|${recipient}}`)) === port) return recipient;
  }
}

/** The order the held msgs of `recipient` (of `ids`, the first allowed) are due in, by their messageIds. */
async function heldOrder(recipient: string, ids: readonly string[]): Promise<string[]> {
  const byHeldId = new Map(ids.map((id) => [heldMsgId("cfg0", "gate0", { org: "default", channel: "sms", messageId: id }, recipient), id]));
  for (const started = Date.now(); ; await sleep(50)) {
    const res = await helper.request().get("/frequency-cap/cfg0/held").query({ recipient });
    assert.equal(res.status, 200, res.text);
    const held = (res.body as { held: { id: string }[] }).held;
    if (held.length === ids.length - 1 || Date.now() - started > 10_000) return held.map((row) => byHeldId.get(row.id) ?? row.id);
  }
}

/**
 * Which of the two paused masters answers first: the recipient's own (its
 * calls answered while a batch it shares waits for the other master), or the
 * other (the recipient's calls then answered all at once, in one read).
 */
const CASES = [
  { name: "its master answers while another master its batch shares is paused", first: "own" },
  { name: "its master answers all its calls at once, after the other master", first: "slow" },
] as const;

/**
 * How the recipient's msgs (and one of the other paused master's) arrive. The
 * first msg of each finds the send queue idle and goes alone, one call.
 */
const ARRIVALS = [
  {
    // the next two gather into one batch, a call to each paused master; then, 30 ms apart, batches of the recipient's alone
    name: "a few msgs, some batches apart",
    async send(send: (recipient: string) => void, own: string, slow: string): Promise<void> {
      send(own);
      send(slow);
      send(own);
      for (let k = 0; k < 3; k++) {
        await sleep(30);
        send(own);
      }
    },
  },
  {
    // a split node's burst in one tick: the send queue sends it in batches of 32 as they fill, only the first with a call
    // to the other master
    name: "a burst of 100 in one tick",
    send(send: (recipient: string) => void, own: string, slow: string): Promise<void> {
      send(own);
      for (let k = 0; k < 100; k++) {
        if (k === 5) send(slow);
        send(own);
      }
      return Promise.resolve();
    },
  },
] as const;

/**
 * A recipient's msgs are judged in the order they came, whatever order the
 * store's answers come back in. The gate keeps its outputs in that order
 * anyway, but a held msg's due time is set when its answer is told, and a
 * recipient's msgs held together are each due 1 ms after the one before: the
 * held listing (by due time) shows the order the answers were told in. On a
 * cluster a batch of the send queue is one call per slot, each to its own
 * master: a batch with an item on a paused master must not hold back its
 * other items' answers until a later batch has overtaken them, and answers
 * that arrive in one read of a socket must be told in the order they were
 * sent, however many calls their batches made.
 */
describe("a recipient's held msgs on a cluster whose masters answer late are due in the order they came", function () {
  this.timeout(60_000);
  const cluster = clusterHelperSuite();

  for (const testCase of CASES) for (const arrivals of ARRIVALS) {
    it(`${testCase.name}: ${arrivals.name}`, async () => {
      const seed = cluster.nodes[0];
      assert.ok(seed);
      const masterOf = await mastersBySlot(seed.port);
      const [own, slow, other] = cluster.nodes.map((n) => n.port) as [number, number, number];
      const rOwn = recipientOn(masterOf, own, "own");
      const rSlow = recipientOn(masterOf, slow, "slow");
      const rOther = recipientOn(masterOf, other, "other");
      const flow = await deployGateFlow({
        store: "redis",
        config: { store: "redis-cluster", redisNodes: cluster.seeds, keyPrefix: uniquePrefix("order"), timeoutMs: 5000 },
        rules: [{ id: "one", scope: "channel", channel: "sms", window_seconds: 600, max_count: 1, disposition: "defer" }],
        gate: { jitter: 0 },
      });
      let n = 0;
      const ownIds: string[] = [];
      const send = (recipient: string): void => {
        const messageId = `${recipient}-${n++}`;
        if (recipient === rOwn) ownIds.push(messageId);
        flow.send({ recipient, channel: "sms", messageId });
      };
      // every master's connection open and its scripts loaded before the pauses; each recipient's first msg allowed
      for (const r of [rOwn, rSlow, rOther]) send(r);
      await flow.out.until(3, 10_000);

      const [ownNode, slowNode] = [own, slow].map((port) => cluster.nodes.find((node) => node.port === port));
      assert.ok(ownNode && slowNode);
      ownNode.pause();
      slowNode.pause();
      try {
        await arrivals.send(send, rOwn, rSlow);
        await sleep(100);
        (testCase.first === "own" ? ownNode : slowNode).resume();
        await sleep(300);
      } finally {
        ownNode.resume();
        slowNode.resume();
      }
      assert.deepEqual(await heldOrder(rOwn, ownIds), ownIds.slice(1), `${rOwn}'s held msgs in the order they came`);
      assert.equal(flow.out.of("caught").length, 0, "none went to Catch");
    });
  }
});
