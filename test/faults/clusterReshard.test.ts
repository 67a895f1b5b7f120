import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import calculateSlot from "cluster-key-slot";
import type { Node } from "node-red";
import { Collector, flowNode, gateNodes, helper, TAB, type Msg } from "../support/nodeRed";
import { deployGateFlow } from "../support/gateFlow";
import { sleep, uniquePrefix } from "../support/redis";
import { clusterHelperSuite } from "../support/clusterHelperSuite";
import { deferHashTag } from "../../src/redis/redisHeldQueue";

const run = promisify(execFile);

const RECIPIENTS = 300;
const PER_RECIPIENT = 8;
const MAX = 5;
/** slots moved from the first master to the second while the stream runs */
const MOVED_SLOTS = 1500;

/** slot → port of the master that owns it */
async function slotOwners(port: number): Promise<Map<number, number>> {
  const { stdout } = await run("redis-cli", ["-p", String(port), "--json", "cluster", "slots"]);
  const owners = new Map<number, number>();
  for (const [from, to, master] of JSON.parse(stdout) as [number, number, [string, number]][]) {
    for (let slot = from; slot <= to; slot++) owners.set(slot, master[1]);
  }
  return owners;
}

/** How many MOVED and ASK redirections the cluster's nodes answered (INFO errorstats). */
async function redirections(ports: number[]): Promise<{ moved: number; ask: number }> {
  let moved = 0;
  let ask = 0;
  for (const port of ports) {
    const { stdout } = await run("redis-cli", ["-p", String(port), "info", "errorstats"]);
    moved += Number(/errorstat_MOVED:count=(\d+)/.exec(stdout)?.[1] ?? 0);
    ask += Number(/errorstat_ASK:count=(\d+)/.exec(stdout)?.[1] ?? 0);
  }
  return { moved, ask };
}

async function nodeId(port: number): Promise<string> {
  return (await run("redis-cli", ["-p", String(port), "cluster", "myid"])).stdout.trim();
}

describe("a Redis Cluster reshards while a gate sends", function () {
  this.timeout(90_000);
  const cluster = clusterHelperSuite();

  it(`follows MOVED and ASK while ${MOVED_SLOTS} slots move: every msg leaves once, caps stay exact`, async () => {
    const [from, to] = cluster.nodes;
    assert.ok(from && to);
    const flow = await deployGateFlow({
      store: "redis", config: { store: "redis-cluster", redisNodes: cluster.seeds, keyPrefix: uniquePrefix("reshard"), timeoutMs: 2000, failMode: "closed" },
      rules: [{ id: "five", scope: "channel", channel: "sms", max_count: MAX, window_seconds: 600 }],
    });
    const before = await slotOwners(from.port);
    const slotOf = (r: number) => calculateSlot(`{default|r${r}}`);

    // 2,400 msgs, 80 every 50 ms (~1.5 s); the reshard starts after the first quarter and runs while they go on
    let reshard: Promise<unknown> | undefined;
    let reshardStarted = 0;
    let reshardEnded = 0;
    const sentAt: number[] = [];
    const total = RECIPIENTS * PER_RECIPIENT;
    for (let i = 0; i < total; i += 80) {
      for (let j = i; j < i + 80; j++) {
        sentAt[j] = Date.now();
        flow.send({ recipient: `r${j % RECIPIENTS}`, channel: "sms", messageId: `m${j}`, payload: { j } });
      }
      if (i >= total / 4 && !reshard) {
        reshardStarted = Date.now();
        reshard = run("redis-cli", [
          "--cluster", "reshard", `127.0.0.1:${from.port}`, "--cluster-from", await nodeId(from.port), "--cluster-to", await nodeId(to.port),
          "--cluster-slots", String(MOVED_SLOTS), "--cluster-yes", "--cluster-pipeline", "10",
        ], { maxBuffer: 64 * 1024 * 1024 }).then(() => { reshardEnded = Date.now(); });
      }
      await sleep(50);
    }
    await reshard;
    await flow.out.until(total, 30_000);
    await sleep(300);

    const after = await slotOwners(to.port);
    const redirected = await redirections(cluster.nodes.map((n) => n.port));
    const movedSlots = [...before].filter(([slot, port]) => after.get(slot) !== port).length;
    const moved = new Set(Array.from({ length: RECIPIENTS }, (_, r) => r).filter((r) => before.get(slotOf(r)) !== after.get(slotOf(r))));
    const during = sentAt.filter((t) => t >= reshardStarted && t <= reshardEnded).length;

    const ids = flow.out.sequence.map((s) => String(s.msg.messageId));
    const allowedBy = new Map<number, number>();
    for (const m of flow.out.of("allowed")) {
      const r = Number(String(m.recipient).slice(1));
      allowedBy.set(r, (allowedBy.get(r) ?? 0) + 1);
    }
    const unmovedOff = [...Array(RECIPIENTS).keys()].filter((r) => !moved.has(r) && allowedBy.get(r) !== MAX);
    const movedOver = [...moved].filter((r) => (allowedBy.get(r) ?? 0) > MAX);
    const movedExact = [...moved].filter((r) => allowedBy.get(r) === MAX).length;
    console.log(`      cluster reshard while sending: ${movedSlots} slots moved in ${reshardEnded - reshardStarted} ms with ${during} msgs sent meanwhile, ${redirected.moved} MOVED and ${redirected.ask} ASK answered; sent ${total}, left ${ids.length}, lost ${total - new Set(ids).size}, twice ${ids.length - new Set(ids).size}, to Catch ${flow.out.of("caught").length}; ${moved.size} recipients moved (${movedExact} exact at ${MAX}), ${RECIPIENTS - moved.size} stayed (${RECIPIENTS - moved.size - unmovedOff.length} exact)`);

    assert.equal(movedSlots, MOVED_SLOTS, "the slots moved");
    assert.ok(moved.size > 10, `${moved.size} recipients' keys moved`);
    assert.ok(during > 100, `${during} msgs were sent while slots moved`);
    assert.ok(redirected.moved + redirected.ask > 0, "the gate's calls were redirected (and followed)");
    assert.equal(ids.length, total, "every msg left by an output");
    assert.equal(new Set(ids).size, total, "none twice");
    assert.equal(flow.out.of("caught").length, 0, "MOVED and ASK were followed: no store error");
    assert.deepEqual(unmovedOff, [], "a recipient whose keys stayed got exactly its cap");
    assert.deepEqual(movedOver, [], "no moved recipient got more than its cap");
  });

  /** redis-cli on one node */
  const cli = async (port: number, ...args: (string | number)[]): Promise<string> => (await run("redis-cli", ["-p", String(port), ...args.map(String)])).stdout.trim();

  /** A slot of the first master and 64 recipients whose keys are in it (and 64 whose keys are not). */
  async function movingSlot(prefix: string): Promise<{ slot: number; inSlot: string[]; elsewhere: string[] }> {
    const [from] = cluster.nodes;
    const owners = await slotOwners((from as { port: number }).port);
    const slot = [...owners].find(([s, port]) => port === from?.port && s > 100)?.[0] as number;
    const inSlot: string[] = [];
    for (let i = 0; inSlot.length < 64; i++) if (calculateSlot(`{default|${prefix}${i}}`) === slot) inSlot.push(`${prefix}${i}`);
    const elsewhere = Array.from({ length: 64 }, (_, i) => `other-${prefix}${i}`).filter((r) => calculateSlot(`{default|${r}}`) !== slot);
    return { slot, inSlot, elsewhere };
  }

  /** Runs `during` while `slot` is mid-move from the first master to the second, half its keys on each; then finishes the move. */
  async function midMove(slot: number, during: () => Promise<void>): Promise<void> {
    const [from, to] = cluster.nodes;
    assert.ok(from && to);
    const [fromId, toId] = [await cli(from.port, "cluster", "myid"), await cli(to.port, "cluster", "myid")];
    await cli(to.port, "cluster", "setslot", slot, "importing", fromId);
    await cli(from.port, "cluster", "setslot", slot, "migrating", toId);
    const keys = (await cli(from.port, "cluster", "getkeysinslot", slot, 1000)).split("\n").filter(Boolean);
    for (const key of keys.filter((_, i) => i % 2 === 0)) await cli(from.port, "migrate", "127.0.0.1", to.port, "", 0, 5000, "keys", key);
    assert.ok(keys.length >= 2, `${keys.length} keys in the slot: some on each master`);
    try {
      await during();
    } finally {
      const rest = (await cli(from.port, "cluster", "getkeysinslot", slot, 1000)).split("\n").filter(Boolean);
      for (const key of rest) await cli(from.port, "migrate", "127.0.0.1", to.port, "", 0, 5000, "keys", key);
      for (const node of cluster.nodes) await cli(node.port, "cluster", "setslot", slot, "node", toId);
    }
  }

  const reasonOf = (m: Msg) => (m.admission as { reason?: string } | undefined)?.reason;

  it("judges a burst of claims exactly while one slot is mid-move, its keys split over two masters (a call over both is refused TRYAGAIN): each recipient's call goes on its own", async () => {
    const { slot, inSlot, elsewhere } = await movingSlot("mid");
    const flow = await deployGateFlow({
      store: "redis", config: { store: "redis-cluster", redisNodes: cluster.seeds, keyPrefix: uniquePrefix("midmove"), timeoutMs: 1000, failMode: "open" },
      rules: [{ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: 600 }],
    });
    // the first half of the slot's recipients have used their one slot: their counter hashes exist
    const used = inSlot.slice(0, 32);
    for (const r of used) flow.send({ recipient: r, channel: "sms", messageId: `first-${r}` });
    await flow.out.until(used.length, 10_000);
    assert.equal(flow.out.of("allowed").length, used.length);
    await midMove(slot, async () => {
      // a burst: each recipient twice, all in one tick, the slot's recipients beside others in every batch
      const everyone = inSlot.flatMap((r, i) => [r, elsewhere[i % elsewhere.length]]);
      for (let k = 0; k < 2; k++) for (const r of everyone) flow.send({ recipient: r, channel: "sms", messageId: `burst${k}-${r}` });
      await flow.out.until(used.length + 2 * everyone.length, 20_000);
      const burst = flow.out.sequence.slice(used.length).map((s) => s.msg);
      const allowedOf = (r: string) => burst.filter((m) => m.recipient === r && flow.out.of("allowed").includes(m)).length;
      assert.equal(burst.filter((m) => reasonOf(m) === "fail_open").length, 0, "no fail_open: the store was never unwell");
      assert.deepEqual(used.filter((r) => allowedOf(r) !== 0), [], "a recipient whose slot was used gets none");
      assert.deepEqual(inSlot.slice(32).filter((r) => allowedOf(r) !== 1), [], "a fresh recipient in the moving slot gets exactly one");
    });
  });

  it("one master stalled (CLIENT PAUSE 1.5 s) under a burst: the other masters' recipients judged exactly, none fail open, the breaker stays closed", async () => {
    const [stalled] = cluster.nodes;
    assert.ok(stalled);
    const owners = await slotOwners(stalled.port);
    const onStalled = (r: string) => owners.get(calculateSlot(`{default|${r}}`)) === stalled.port;
    const flow = await deployGateFlow({
      store: "redis", config: { store: "redis-cluster", redisNodes: cluster.seeds, keyPrefix: uniquePrefix("stall"), timeoutMs: 1000, failMode: "open" },
      rules: [{ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: 600 }],
    });
    // every master connected
    for (let i = 0; i < 60; i++) flow.send({ recipient: `warm${i}`, channel: "sms", messageId: `w${i}` });
    await flow.out.until(60, 10_000);
    const recipients = Array.from({ length: 300 }, (_, i) => `s${i}`);
    await cli(stalled.port, "client", "pause", 1500, "all");
    for (let k = 0; k < 2; k++) for (const r of recipients) flow.send({ recipient: r, channel: "sms", messageId: `m${k}-${r}` });
    await flow.out.until(60 + 600, 15_000);
    const burst = flow.out.sequence.slice(60).map((x) => x.msg);
    const healthy = recipients.filter((r) => !onStalled(r));
    assert.ok(healthy.length > 100 && healthy.length < 300, `${healthy.length} recipients on the healthy masters`);
    const ofHealthy = burst.filter((m) => healthy.includes(String(m.recipient)));
    assert.equal(ofHealthy.filter((m) => reasonOf(m) === "fail_open").length, 0, "a healthy master's answers are kept");
    const allowed = new Map<string, number>();
    for (const m of ofHealthy) if (flow.out.of("allowed").includes(m)) allowed.set(String(m.recipient), (allowed.get(String(m.recipient)) ?? 0) + 1);
    assert.deepEqual(healthy.filter((r) => allowed.get(r) !== 1), [], "each exactly once");
    const config = helper.getNode("cfg0") as unknown as { service: { access: { breaker: { opens: number } } } };
    assert.equal(config.service.access.breaker.opens, 0, "the breaker never opened: the store was up");
  });

  it("suppresses exactly while one slot is mid-move: opted-out recipients of it skipped, a copy of a body refused, none fail open", async () => {
    const { slot, inSlot, elsewhere } = await movingSlot("sup");
    await helper.load(gateNodes, [
      TAB,
      { id: "cfg", type: "cap-config", store: "redis-cluster", redisNodes: cluster.seeds, keyPrefix: uniquePrefix("midmove-sup"), rules: [], timeoutMs: 1000, failMode: "open" },
      flowNode({ id: "sup", type: "suppression-gate", config: "cfg", duplicateWindow: 600, wires: [["passed"], ["skipped"]] }),
      flowNode({ id: "passed", type: "helper" }), flowNode({ id: "skipped", type: "helper" }),
    ]);
    const out = new Collector(["passed", "skipped"]);
    const sup = helper.getNode("sup") as Node;
    // half the slot's recipients opted out (their block lists exist), and a msg sent to each of the others (their marks exist)
    const optedOut = inSlot.filter((_, i) => i % 2 === 0);
    for (const r of optedOut) sup.receive({ topic: "suppress", recipient: r, channel: "sms", reason: "STOP" });
    await sleep(300);
    for (const r of inSlot.filter((_, i) => i % 2 === 1)) sup.receive({ recipient: r, channel: "sms", messageId: `before-${r}`, payload: "earlier" });
    await out.until(32, 10_000);
    await midMove(slot, async () => {
      const everyone = [...inSlot, ...elsewhere];
      // each recipient: a new body, then a copy of it
      for (let k = 0; k < 2; k++) for (const r of everyone) sup.receive({ recipient: r, channel: "sms", messageId: `m${k}-${r}`, payload: `hello ${r}` });
      await out.until(32 + 2 * everyone.length, 20_000);
      const during = out.sequence.slice(32).map((s) => s.msg);
      assert.equal(during.filter((m) => reasonOf(m) === "fail_open").length, 0, "no fail_open: the store was never unwell");
      const skippedAs = (r: string) => during.filter((m) => m.recipient === r && out.of("skipped").includes(m)).map(reasonOf);
      assert.deepEqual(optedOut.filter((r) => skippedAs(r).join() !== "opted_out,opted_out"), [], "an opted-out recipient of the moving slot is skipped");
      const notOptedOut = [...inSlot.filter((_, i) => i % 2 === 1), ...elsewhere];
      assert.deepEqual(notOptedOut.filter((r) => skippedAs(r).join() !== "duplicate_content"), [], "the first of a body passes, its copy is a duplicate");
    });
  });

  it("holds while the defer queue's slot is mid-move (its keys split over two masters, TRYAGAIN): none to Catch, each held msg released once (one msg, then 100 in one tick)", async () => {
    const [first] = cluster.nodes;
    assert.ok(first);
    const owners = await slotOwners(first.port);
    let keyPrefix = "";
    let slot = -1;
    for (let i = 0; slot < 0; i++) {
      const prefix = uniquePrefix(`dqmove${i}`);
      const s = calculateSlot(deferHashTag(prefix));
      if (owners.get(s) === first.port) [keyPrefix, slot] = [prefix, s];
    }
    const flow = await deployGateFlow({
      store: "redis", config: { store: "redis-cluster", redisNodes: cluster.seeds, keyPrefix, timeoutMs: 1000 }, gate: { deferMax: 60 },
      rules: [{ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: 2, disposition: "defer" }],
    });
    const recipients = Array.from({ length: 101 }, (_, i) => `dq${i}`);
    for (const r of recipients) flow.send({ recipient: r, channel: "sms", messageId: `first-${r}` });
    await flow.out.until(recipients.length, 10_000);
    // one held before the move: the queue's keys are in its slot
    flow.send({ recipient: "dq0", channel: "sms", messageId: "held-dq0" });
    await sleep(300);
    await midMove(slot, async () => {
      for (const r of recipients.slice(1)) flow.send({ recipient: r, channel: "sms", messageId: `held-${r}` });
      await sleep(300);
      assert.equal(flow.out.of("caught").length, 0, `${flow.out.of("caught").length} of 100 holds to Catch while the slot moved`);
    });
    await flow.out.until(2 * recipients.length, 15_000);
    await sleep(500);
    assert.equal(flow.out.of("caught").length, 0);
    const released = flow.out.of("deferred").map((m) => String(m.messageId));
    assert.equal(released.length, recipients.length, "each held msg released");
    assert.deepEqual(new Set(released), new Set(recipients.map((r) => `held-${r}`)), "each once");
  });
});
