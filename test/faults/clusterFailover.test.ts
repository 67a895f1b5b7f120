import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import calculateSlot from "cluster-key-slot";
import { helper, type Msg } from "../support/nodeRed";
import { deployGateFlow } from "../support/gateFlow";
import { sleep, uniquePrefix } from "../support/redis";
import { OwnRedisCluster } from "../support/redisServer";

const run = promisify(execFile);

const RECIPIENTS = 300;
const PER_RECIPIENT = 8;
const MAX = 5;

/** [first slot, last slot, master port, replica ports] of each range */
async function slotRanges(port: number): Promise<{ from: number; to: number; master: number; replicas: number[] }[]> {
  const { stdout } = await run("redis-cli", ["-p", String(port), "--json", "cluster", "slots"]);
  return (JSON.parse(stdout) as [number, number, [string, number], ...[string, number][]][])
    .map(([from, to, master, ...replicas]) => ({ from, to, master: master[1], replicas: replicas.map((r) => r[1]) }));
}

describe("a Redis Cluster master with a replica is killed -9 while a gate sends", function () {
  this.timeout(90_000);
  // a node is failed after 1 s (not the default 15 s); the other masters keep serving their slots meanwhile
  const cluster = new OwnRedisCluster(3, 1, ["--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no"]);
  before(async function () {
    this.timeout(40_000);
    await cluster.start();
    // every master shows its replica, and every replica is in sync
    for (let i = 0; ; i++) {
      const ranges = await slotRanges(cluster.nodes[0]?.port);
      const links = await Promise.all(cluster.nodes.map(async (n) => (await run("redis-cli", ["-p", String(n.port), "info", "replication"])).stdout));
      if (ranges.every((r) => r.replicas.length === 1) && links.every((l) => l.includes("role:master") || l.includes("master_link_status:up"))) break;
      if (i > 200) throw new Error("the replicas never came in sync");
      await sleep(100);
    }
    await helper.startServer();
  });
  after(async () => {
    await helper.stopServer();
    await cluster.stop();
  });
  afterEach(() => helper.unload());

  it("every msg leaves once; recipients on the other masters stay exact; the replica takes over by itself", async () => {
    const flow = await deployGateFlow({
      store: "redis", config: { store: "redis-cluster", redisNodes: cluster.seeds, keyPrefix: uniquePrefix("failover"), timeoutMs: 5000, failMode: "closed" },
      rules: [{ id: "five", scope: "channel", channel: "sms", max_count: MAX, window_seconds: 600 }],
    });
    const ranges = await slotRanges(cluster.nodes[0]?.port);
    const victim = ranges[0];
    assert.equal(victim.replicas.length, 1, "the victim master has a replica");
    const victimNode = cluster.nodes.find((n) => n.port === victim.master);
    assert.ok(victimNode);
    const ownerOf = (slot: number) => ranges.find((r) => slot >= r.from && slot <= r.to)?.master;
    const onVictim = (r: number) => ownerOf(calculateSlot(`{default|r${r}}`)) === victim.master;

    const total = RECIPIENTS * PER_RECIPIENT;
    const sentAt: number[] = [];
    let killedAt = 0;
    for (let i = 0; i < total; i += 40) {
      for (let j = i; j < i + 40; j++) {
        sentAt[j] = Date.now();
        flow.send({ recipient: `r${j % RECIPIENTS}`, channel: "sms", messageId: `m${j}`, payload: { j } });
      }
      if (i >= total / 4 && killedAt === 0) {
        killedAt = Date.now();
        void victimNode.stop();
      }
      await sleep(100);
    }
    await flow.out.until(total, 30_000);
    await sleep(300);

    const ids = flow.out.sequence.map((s) => String(s.msg.messageId));
    const recipientOf = (m: Msg) => Number(String(m.recipient).slice(1));
    const count = (id: string) => {
      const by = new Map<number, number>();
      for (const m of flow.out.of(id)) by.set(recipientOf(m), (by.get(recipientOf(m)) ?? 0) + 1);
      return by;
    };
    const allowed = count("allowed");
    const caught = count("caught");
    const others = [...Array(RECIPIENTS).keys()].filter((r) => !onVictim(r));
    const victims = [...Array(RECIPIENTS).keys()].filter(onVictim);
    // a recipient the failover did not touch: exactly min(cap, msgs the store answered)
    const othersOff = others.filter((r) => (allowed.get(r) ?? 0) !== Math.min(MAX, PER_RECIPIENT - (caught.get(r) ?? 0)));
    const victimsOver = victims.filter((r) => (allowed.get(r) ?? 0) > MAX);
    const index = (m: Msg) => Number(String(m.messageId).slice(1));
    const othersCaught = others.reduce((n, r) => n + (caught.get(r) ?? 0), 0);
    const lastCaught = Math.max(killedAt, ...flow.out.of("caught").map((m) => sentAt[index(m)]));
    const promoted = (await run("redis-cli", ["-p", String(victim.replicas[0]), "role"])).stdout.split("\n")[0];
    console.log(`      cluster master kill -9 with a replica: sent ${total}, left ${ids.length}, lost ${total - new Set(ids).size}, twice ${ids.length - new Set(ids).size}, to Catch ${flow.out.of("caught").length} (intact, fail closed; ${othersCaught} of them for recipients on the other masters); ${others.length} recipients on other masters (${others.length - othersOff.length} exact), ${victims.length} on the killed one (${victimsOver.length} over the cap); last failure on a msg sent ${lastCaught - killedAt} ms after the kill, replica now ${promoted}`);

    assert.equal(ids.length, total, "every msg left by an output");
    assert.equal(new Set(ids).size, total, "none twice");
    assert.equal(promoted, "master", "the replica took over");
    assert.ok(victims.length > 10 && others.length > 10);
    assert.deepEqual(othersOff, [], "recipients on the other masters got exactly their cap of what the store answered");
    assert.equal(othersCaught, 0, "the failing master did not get sends to the healthy masters refused");
    assert.ok(sentAt[total - 1] - lastCaught > 500, "msgs sent after the failover were answered by the new master");
    for (const m of flow.out.of("caught")) assert.deepEqual(m.payload, { j: index(m) }, "intact");
    assert.ok(victims.every((r) => (allowed.get(r) ?? 0) + (caught.get(r) ?? 0) > 0), "every victim recipient was answered or caught");
  });
});
