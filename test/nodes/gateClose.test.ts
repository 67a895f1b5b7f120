import assert from "node:assert/strict";
import { Collector, flowNode, gateNodes, helper, reasonOf, redeploy, TAB, type Msg } from "../support/nodeRed";
import throughputGate from "../../src/nodes/throughputGate";
import { REDIS_URL, redisClient, dropPrefix, sleep, uniquePrefix } from "../support/redis";
import { SlowLink } from "../support/slowLink";
import type { CapConfigNode } from "../../src/nodes/gate/capConfigNode";
import type { CapService } from "../../src/core/capService";
import { parkInQueue } from "../../src/nodes/gate/parking";

/**
 * A gate on a full deploy (the test helper's unload stops every
 * node of the flow, as a full deploy does): Node-RED drops what is sent to a
 * stopped node, so whatever the gate judges once it has begun to close must
 * be kept for its next deployment, and leave there exactly once.
 */
const nodes = [...gateNodes, throughputGate];
const OUTPUTS = ["allowed", "skipped", "deferred", "caught"];

/** The flow: a cap-config, the gate `tp0` (none when `gate` is undefined), the outputs' helper nodes and a Catch. */
function flowOf(keyPrefix: string, gate: Record<string, unknown> | undefined, type = "throughput-gate", rules: object[] = [], config: Record<string, unknown> = {}): object[] {
  return [
    TAB,
    { id: "cfg0", type: "cap-config", store: "redis", redisUrl: REDIS_URL, keyPrefix, rules, timeoutMs: 1000, ...config },
    ...(gate ? [flowNode({ id: "tp0", type, config: "cfg0", ...gate, wires: [["allowed"], ["skipped"], ["deferred"]] })] : []),
    ...OUTPUTS.map((id) => flowNode({ id, type: "helper" })),
    flowNode({ id: "catch", type: "catch", scope: null, wires: [["caught"]] }),
  ];
}

async function deploy(keyPrefix: string, gate: Record<string, unknown>, type = "throughput-gate", rules: object[] = []): Promise<{ out: Collector; send: (msg: Record<string, unknown>) => void; service: CapService }> {
  await helper.load(nodes, flowOf(keyPrefix, gate, type, rules));
  const out = new Collector(OUTPUTS);
  const service = (helper.getNode("cfg0") as unknown as CapConfigNode).service as CapService;
  return { out, service, send: (msg) => helper.getNode("tp0")?.receive({ recipient: "r", channel: "sms", ...msg }) };
}

/** Every msg out of allowed or skipped across the deployments, by messageId: each must be there once. */
function tally(...outs: Collector[]): { ids: string[]; allowed: Msg[]; skipped: Msg[]; caught: number } {
  const allowed = outs.flatMap((o) => o.of("allowed"));
  const skipped = outs.flatMap((o) => o.of("skipped"));
  return { ids: [...allowed, ...skipped].map((m) => String(m.messageId)), allowed, skipped, caught: outs.reduce((n, o) => n + o.of("caught").length + o.of("deferred").length, 0) };
}

function assertEachOnce(ids: readonly string[], expected: number): void {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  const twice = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
  assert.deepEqual(twice.slice(0, 5), [], `${twice.length} msg(s) out more than once`);
  assert.equal(counts.size, expected, `${expected - counts.size} msg(s) lost`);
}

/** Within 3 s the queue of tp0 holds nothing: every kept msg was released and acked. */
async function assertNothingHeld(service: CapService): Promise<void> {
  const queue = service.deferrals.queueOf("tp0");
  const until = Date.now() + 3000;
  while ((await queue.size()) > 0 && Date.now() < until) await sleep(20);
  assert.equal(await queue.size(), 0, "msgs left in the queue");
}

type Deployed = Awaited<ReturnType<typeof deploy>>;

/**
 * The gate deployed, `burst` run on it, and the flow closed (a full deploy)
 * in the same tick, the burst still at work; deployed again after `pauseMs`.
 * Waits until `expected` msgs have left by allowed or skipped over the two
 * deployments, and checks each left once and none went to Catch.
 */
async function acrossFullDeploy(
  keyPrefix: string, setup: { gate: Record<string, unknown>; type?: string; rules?: object[] }, expected: number,
  burst: (first: Deployed) => void | Promise<void>, pauseMs = 0,
): Promise<{ first: Deployed; second: Deployed } & ReturnType<typeof tally>> {
  const first = await deploy(keyPrefix, setup.gate, setup.type, setup.rules);
  // awaited only when it is async: a sync burst is closed on in its own tick, before any of it is judged
  // (a msg sent just before the deploy and still on its way is dropped by Node-RED, whatever the gate does)
  const running = burst(first);
  if (running) await running;
  await helper.unload();
  if (pauseMs > 0) await sleep(pauseMs);
  const second = await deploy(keyPrefix, setup.gate, setup.type, setup.rules);
  const started = Date.now();
  while (tally(first.out, second.out).ids.length < expected && Date.now() - started < 15_000) await sleep(20);
  await sleep(300);
  const outcome = tally(first.out, second.out);
  assert.equal(outcome.caught, 0);
  assertEachOnce(outcome.ids, expected);
  return { first, second, ...outcome };
}

describe("a gate on a full deploy: what it judges as it closes is kept and leaves once", function () {
  this.timeout(60_000);
  const prefixes: string[] = [];
  const prefix = (name: string): string => {
    const p = uniquePrefix(name);
    prefixes.push(p);
    return p;
  };

  afterEach(async () => {
    await helper.unload();
    const admin = redisClient();
    for (const p of prefixes.splice(0)) await dropPrefix(admin, p);
    await admin.quit();
  });

  for (const disposition of ["skip", "queue"] as const) {
    it(`a burst of 2,000 in the intake as the gate closes (${disposition}): every msg leaves once, judged before or after the redeploy, none into the stopped flow`, async () => {
      const keyPrefix = prefix(`tp-close-burst-${disposition}`);
      // skip: 500 pass at once, the rest are skipped; queue: 500 at once, the rest paced over 1.5 s
      const gate = { rate: 1000, burst: 500, disposition };
      // closed in the same tick: the burst is still in the intake, its reservations answered while the gate closes
      let handBacks = 0;
      let handedBack = 0;
      const { second, allowed, skipped } = await acrossFullDeploy(keyPrefix, { gate }, 2000, (first) => {
        const deferrals = first.service.deferrals;
        const handBack = deferrals.handBack.bind(deferrals);
        deferrals.handBack = (g, items, retryForMs) => {
          handBacks++;
          handedBack += items.length;
          return handBack(g, items, retryForMs);
        };
        for (let i = 0; i < 2000; i++) first.send({ messageId: `b${i}`, recipient: `r${i}` });
      });
      if (disposition === "queue") {
        // the msgs reserved as the gate closes go back to the queue together, a store call per turn of the loop, not one each
        assert.ok(handedBack > 1000, `${handedBack} handed back: the burst was not reserved during the close`);
        assert.ok(handBacks <= 20, `${handBacks} hand-back calls for ${handedBack} msgs`);
      }
      if (disposition === "skip") {
        assert.ok(allowed.length >= 500 && allowed.length < 2000, `${allowed.length} allowed`);
        assert.ok(skipped.every((m) => reasonOf(m) === "throughput_exceeded"), "skipped for the ceiling");
      } else {
        assert.equal(allowed.length, 2000);
      }
      // what the first deployment judged and kept carries a release_id, as a held msg does
      assert.ok(second.out.of("allowed").concat(second.out.of("skipped")).every((m) => typeof (m.admission as { release_id?: unknown }).release_id === "string"));
      await assertNothingHeld(second.service);
    });
  }

  it("a frequency-cap-gate with a burst of 2,000 in the intake as it closes (1,000 recipients, each twice, cap 1): each leaves once, 1,000 allowed", async () => {
    const keyPrefix = prefix("fc-close-burst");
    const rules = [{ id: "one", scope: "global", max_count: 1, window_seconds: 600 }];
    const { second, allowed, skipped } = await acrossFullDeploy(keyPrefix, { gate: {}, type: "frequency-cap-gate", rules }, 2000, (first) => {
      for (let i = 0; i < 2000; i++) first.send({ messageId: `b${i}`, recipient: `r${i % 1000}` });
    });
    assert.equal(allowed.length, 1000);
    assert.ok(allowed.every((m) => reasonOf(m) === undefined), "allowed under the cap, none failed open");
    assert.ok(skipped.every((m) => reasonOf(m) === "frequency_capped"), `skipped: ${[...new Set(skipped.map(reasonOf))].join(",")}`);
    await assertNothingHeld(second.service);
  });

  it("a suppression-gate with a burst of 2,000 in the intake as it closes (1,000 opted out): each leaves once, by the output it was judged for", async () => {
    const keyPrefix = prefix("sg-close-burst");
    const { second, allowed, skipped } = await acrossFullDeploy(keyPrefix, { gate: { duplicateWindow: 0 }, type: "suppression-gate" }, 2000, async (first) => {
      await first.service.suppression.suppress(Array.from({ length: 1000 }, (_, i) => ({ org: "default", recipient: `r${2 * i + 1}`, channel: "*", reason: "stop", at: new Date().toISOString() })));
      for (let i = 0; i < 2000; i++) first.send({ messageId: `b${i}`, recipient: `r${i}` });
    });
    assert.ok(allowed.every((m) => Number(String(m.recipient).slice(1)) % 2 === 0), "only those not opted out allowed");
    assert.equal(skipped.length, 1000);
    await assertNothingHeld(second.service);
  });

  it("a partial deploy that only modifies the gate mid-burst parks nothing: the nodes after it still run and take all 3,000 msgs of one recipient, in order", async () => {
    const keyPrefix = prefix("fc-partial-modified");
    const flow = (name: string) => flowOf(keyPrefix, { name }, "frequency-cap-gate");
    await helper.load(nodes, flow("a"));
    const out = new Collector(OUTPUTS);
    const service = (helper.getNode("cfg0") as unknown as CapConfigNode).service as CapService;
    for (let i = 0; i < 3000; i++) helper.getNode("tp0")?.receive({ channel: "sms", messageId: `m${i}`, recipient: "same" });
    await redeploy(flow("b"), "nodes");
    helper.getNode("tp0")?.receive({ channel: "sms", messageId: "last", recipient: "same" });
    await out.until(3001, 20_000);
    assert.equal(await service.deferrals.queueOf("tp0").size(), 0, "parked");
    const order = out.sequence.map((x) => (x.msg.messageId === "last" ? 3000 : Number(String(x.msg.messageId).slice(1))));
    const firstOut = order.findIndex((n, i) => i > 0 && n < order[i - 1]);
    assert.equal(firstOut, -1, `out of order at ${firstOut}: ${order.slice(Math.max(0, firstOut - 3), firstOut + 3).join(",")}`);
    assertEachOnce(out.sequence.map((x) => String(x.msg.messageId)), 3001);
  });

  it("a partial deploy that modifies the gate and the node after it mid-burst parks what that node would have dropped: all 2,000 leave once", async () => {
    const keyPrefix = prefix("fc-partial-both");
    // the store's answers come 800 ms late, so every msg is judged once the deploy has stopped the gate and the node after it
    // (a msg sent just before that, still on its way, is dropped by Node-RED whatever the gate does)
    const link = await SlowLink.open();
    try {
      // a cap, so that each msg waits for the store (with no cap to check a msg is judged at once)
      const rules = [{ id: "ten", scope: "global", max_count: 10, window_seconds: 600 }];
      const flow = (name: string) => flowOf(keyPrefix, { name }, "frequency-cap-gate", rules, { redisUrl: link.url, timeoutMs: 5000 })
        .map((n) => ((n as { id?: string }).id === "allowed" ? { ...n, name } : n));
      await helper.load(nodes, flow("a"));
      const first = new Collector(OUTPUTS);
      link.stallRequests(800);
      for (let i = 0; i < 2000; i++) helper.getNode("tp0")?.receive({ channel: "sms", messageId: `m${i}`, recipient: `r${i}` });
      await redeploy(flow("b"), "nodes");
      // only "allowed" was replaced: the other helper nodes (and Catch) are the ones `first` listens to
      const second = new Collector(["allowed"]);
      const started = Date.now();
      while (tally(first, second).ids.length < 2000 && Date.now() - started < 10_000) await sleep(20);
      await sleep(300);
      assert.equal(tally(first, second).caught, 0);
      assertEachOnce(tally(first, second).ids, 2000);
      assert.ok(second.of("allowed").length > 0, "none parked: the test proves nothing");
    } finally {
      await helper.unload();
      await link.close();
    }
  });

  it("a partial deploy that removes the gate mid-burst parks nothing: all 2,000 reach the nodes after it, which still run", async () => {
    const keyPrefix = prefix("fc-partial-removed");
    await helper.load(nodes, flowOf(keyPrefix, {}, "frequency-cap-gate"));
    const out = new Collector(OUTPUTS);
    for (let i = 0; i < 2000; i++) helper.getNode("tp0")?.receive({ channel: "sms", messageId: `m${i}`, recipient: `r${i}` });
    await redeploy(flowOf(keyPrefix, undefined, "frequency-cap-gate"), "nodes");
    await out.until(2000, 10_000);
    assertEachOnce(out.sequence.map((x) => String(x.msg.messageId)), 2000);
  });

  it("a parked msg let out after its expiresAt leaves by skipped (defer_expired) and gives back the claim it carried", async () => {
    const keyPrefix = prefix("fc-parked-expired");
    const rules = [{ id: "one", scope: "global", max_count: 1, window_seconds: 600 }];
    const expiresAt = Date.now() + 400;
    const { second } = await acrossFullDeploy(keyPrefix, { gate: {}, type: "frequency-cap-gate", rules }, 300, (first) => {
      for (let i = 0; i < 300; i++) first.send({ messageId: `m${i}`, recipient: `r${i}`, expiresAt });
    }, 600);
    const late = second.out.of("allowed").length + second.out.of("skipped").filter((m) => reasonOf(m) !== "defer_expired").length;
    assert.equal(late, 0, "a parked msg left after its expiresAt otherwise than as defer_expired");
    const expired = second.out.of("skipped");
    assert.ok(expired.length > 0, "none was parked: the test proves nothing");
    // the claim it carried was given back: its recipient may send again
    const recipient = String(expired[0]?.recipient);
    second.send({ messageId: "again", recipient });
    await second.out.until(expired.length + 1, 3000);
    assert.ok(second.out.of("allowed").some((m) => m.messageId === "again"), `${recipient}'s claim was not given back`);
  });

  it("parked msgs of one recipient leave in the order they came in: 600 in the intake of a full deploy", async () => {
    const keyPrefix = prefix("fc-parked-order");
    const { first, second } = await acrossFullDeploy(keyPrefix, { gate: {}, type: "frequency-cap-gate" }, 600, (deployed) => {
      for (let i = 0; i < 600; i++) deployed.send({ messageId: `m${i}`, recipient: "same" });
    });
    const order = [...first.out.sequence, ...second.out.sequence].map((x) => Number(String(x.msg.messageId).slice(1)));
    const firstOut = order.findIndex((n, i) => i > 0 && n < order[i - 1]);
    assert.equal(firstOut, -1, `out of order at ${firstOut}: ${order.slice(Math.max(0, firstOut - 3), firstOut + 3).join(",")}`);
    assert.ok(second.out.total() > 0, "none was parked: the test proves nothing");
  });

  it("msgs parked in one ms are handed out by the queue in the order they were parked: 1,000 in one tick (redis)", async () => {
    const keyPrefix = prefix("parked-id-order");
    const { service } = await deploy(keyPrefix, {}, "frequency-cap-gate");
    // one call, one ms: every entry has the same dueAt, so the queue orders them by id
    await parkInQueue(service.deferrals, "order-gate")(Array.from({ length: 1000 }, (_, i) => ({ msg: { _msgid: `k${i}`, messageId: `k${i}` }, output: "allowed" as const })));
    const taken = await service.deferrals.queueOf("order-gate").takeDue(1000, 30_000);
    assert.equal(taken.length, 1000);
    assert.equal(new Set(taken.map((m) => m.dueAt)).size, 1, "parked in one ms");
    const order = taken.map((m) => Number(String(m.msg.messageId).slice(1)));
    const firstOut = order.findIndex((n, i) => i > 0 && n < order[i - 1]);
    assert.equal(firstOut, -1, `handed out of order at ${firstOut}: ${order.slice(Math.max(0, firstOut - 3), firstOut + 3).join(",")}`);
  });

  it("a record parked at a full deploy leaves as it was judged however late: the send it records happened", async () => {
    const keyPrefix = prefix("fc-parked-record");
    const rules = [{ id: "one", scope: "global", max_count: 1, window_seconds: 600 }];
    const expiresAt = Date.now() + 300;
    const { second } = await acrossFullDeploy(keyPrefix, { gate: { mode: "record" }, type: "frequency-cap-gate", rules }, 300, (first) => {
      for (let i = 0; i < 300; i++) first.send({ messageId: `m${i}`, recipient: `r${i}`, expiresAt });
    }, 500);
    assert.ok(second.out.total() > 0, "none was parked: the test proves nothing");
    assert.deepEqual(second.out.of("skipped").map(reasonOf), [], "a record left by skipped");
  });

  for (const control of ["reset", "flush"] as const) {
    it(`a msg.${control} still at work as the gate closes: each held msg leaves once (redis, durable holds)`, async () => {
      const keyPrefix = prefix(`tp-close-${control}`);
      // 5/s, burst 1: the first leaves at once, the other six are held durably (200 ms to 1.2 s on)
      const gate = { rate: 5, burst: 1 };
      const { second } = await acrossFullDeploy(keyPrefix, { gate }, 7, async (first) => {
        for (let i = 0; i < 7; i++) first.send({ messageId: `h${i}`, recipient: `r${i}` });
        await first.out.until(1, 2000);
        await sleep(50);
        // the control msg has begun as the gate closes under it
        first.send({ [control]: true });
      });
      await assertNothingHeld(second.service);
    });
  }
});
