import assert from "node:assert/strict";
import { Collector, flowNode, gateNodes, helper, reasonOf, TAB, type Msg } from "../support/nodeRed";
import throughputGate from "../../src/nodes/throughputGate";
import { REDIS_URL, redisClient, dropPrefix, sleep, uniquePrefix } from "../support/redis";
import type { CapConfigNode } from "../../src/nodes/capConfig";
import type { CapService } from "../../src/core/capService";

/**
 * A gate on a full deploy (the test helper's unload stops every
 * node of the flow, as a full deploy does): Node-RED drops what is sent to a
 * stopped node, so whatever the gate judges once it has begun to close must
 * be kept for its next deployment, and leave there exactly once.
 */
const nodes = [...gateNodes, throughputGate];
const OUTPUTS = ["allowed", "skipped", "deferred", "caught"];

async function deploy(keyPrefix: string, gate: Record<string, unknown>, type = "throughput-gate", rules: object[] = []): Promise<{ out: Collector; send: (msg: Record<string, unknown>) => void; service: CapService }> {
  await helper.load(nodes, [
    TAB,
    { id: "cfg0", type: "cap-config", store: "redis", redisUrl: REDIS_URL, keyPrefix, rules, timeoutMs: 1000 },
    flowNode({ id: "tp0", type, config: "cfg0", ...gate, wires: [["allowed"], ["skipped"], ["deferred"]] }),
    ...OUTPUTS.map((id) => flowNode({ id, type: "helper" })),
    flowNode({ id: "catch", type: "catch", scope: null, wires: [["caught"]] }),
  ]);
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
      const first = await deploy(keyPrefix, gate);
      for (let i = 0; i < 2000; i++) first.send({ messageId: `b${i}`, recipient: `r${i}` });
      // closed in the same tick: the burst is still in the intake, its reservations answered while the gate closes
      await helper.unload();
      const second = await deploy(keyPrefix, gate);
      const started = Date.now();
      while (tally(first.out, second.out).ids.length < 2000 && Date.now() - started < 15_000) await sleep(20);
      await sleep(300);
      const { ids, allowed, skipped, caught } = tally(first.out, second.out);
      assert.equal(caught, 0);
      assertEachOnce(ids, 2000);
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
    const first = await deploy(keyPrefix, {}, "frequency-cap-gate", rules);
    for (let i = 0; i < 2000; i++) first.send({ messageId: `b${i}`, recipient: `r${i % 1000}` });
    await helper.unload();
    const second = await deploy(keyPrefix, {}, "frequency-cap-gate", rules);
    const started = Date.now();
    while (tally(first.out, second.out).ids.length < 2000 && Date.now() - started < 15_000) await sleep(20);
    await sleep(300);
    const { ids, allowed, skipped, caught } = tally(first.out, second.out);
    assert.equal(caught, 0);
    assertEachOnce(ids, 2000);
    assert.equal(allowed.length, 1000);
    assert.ok(allowed.every((m) => reasonOf(m) === undefined), "allowed under the cap, none failed open");
    assert.ok(skipped.every((m) => reasonOf(m) === "frequency_capped"), `skipped: ${[...new Set(skipped.map(reasonOf))].join(",")}`);
    await assertNothingHeld(second.service);
  });

  for (const control of ["reset", "flush"] as const) {
    it(`a msg.${control} still at work as the gate closes: each held msg leaves once (redis, durable holds)`, async () => {
      const keyPrefix = prefix(`tp-close-${control}`);
      // 5/s, burst 1: the first leaves at once, the other six are held durably (200 ms to 1.2 s on)
      const gate = { rate: 5, burst: 1 };
      const first = await deploy(keyPrefix, gate);
      for (let i = 0; i < 7; i++) first.send({ messageId: `h${i}`, recipient: `r${i}` });
      await first.out.until(1, 2000);
      await sleep(50);
      first.send({ [control]: true });
      // the control msg has begun; the gate closes under it
      await helper.unload();
      const second = await deploy(keyPrefix, gate);
      const started = Date.now();
      while (tally(first.out, second.out).ids.length < 7 && Date.now() - started < 10_000) await sleep(20);
      await sleep(500);
      const { ids, caught } = tally(first.out, second.out);
      assert.equal(caught, 0);
      assertEachOnce(ids, 7);
      await assertNothingHeld(second.service);
    });
  }
});
