import assert from "node:assert/strict";
import type { NodeStatus } from "node-red";
import { deployGateFlow, sendInOrder, type GateFlow } from "../support/gateFlow";
import { useUserDir } from "../support/userDir";
import { clearOfPeriodEnd } from "../support/calendarClock";
import { Collector, flowNode, gateNodes, helper, reasonOf, TAB, type Msg } from "../support/nodeRed";
import { sleep, uniquePrefix } from "../support/redis";
import { STORE_KINDS, SuiteStore } from "../support/suiteStore";

type Admission = { status: string; reason?: string; release_at?: string; deferrals?: number; claims: unknown[]; trail: { status: string }[] };
const admissionOf = (m: Msg | undefined) => m?.admission as Admission;

for (const kind of STORE_KINDS) {
  describe(`frequency-cap-gate defer and collapse (${kind} store)`, function () {
    this.timeout(30_000);
    let keyPrefix: string;
    const store = new SuiteStore(kind);
    store.hooks();
    useUserDir("defer");
    before(() => helper.startServer());
    after(() => helper.stopServer());
    beforeEach(() => { keyPrefix = uniquePrefix(`defer-${kind}`); });
    afterEach(async () => {
      await helper.unload();
      await store.drop(keyPrefix);
    });

    const deploy = (disposition: string, extra: Record<string, unknown> = {}): Promise<GateFlow> => deployGateFlow({
      store, config: { keyPrefix, timeoutMs: 2000 }, gate: { deferMax: 60, ...extra },
      rules: [{ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: 2, disposition }],
    });

    it("holds a capped msg and releases it by deferred once the slot re-opens, never before, exactly once", async () => {
      const flow = await deploy("defer");
      const shown: string[] = [];
      const original = flow.gate.status.bind(flow.gate);
      flow.gate.status = (s: string | NodeStatus) => { if (typeof s !== "string") shown.push(String(s.text)); original(s); };
      const started = Date.now();
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "m1", payload: "first" }]);
      flow.send({ recipient: "r", channel: "sms", messageId: "m2", payload: { keep: ["me", 1, true, null] }, custom: { deep: { x: 1 } } });
      await sleep(1200);
      assert.equal(flow.out.of("deferred").length, 0, "not released before the slot re-opens");
      assert.equal(flow.out.of("skipped").length, 0);
      assert.ok(shown.some((t) => t.includes("held 1")), shown.join("\n"));
      await flow.out.until(2, 5000);
      const released = flow.out.of("deferred");
      assert.equal(released.length, 1);
      const waited = Date.now() - started;
      assert.ok(waited >= 1900, `released after ${waited} ms`);
      const msg = released[0];
      assert.equal(msg.messageId, "m2");
      assert.deepEqual(msg.payload, { keep: ["me", 1, true, null] });
      assert.deepEqual(msg.custom, { deep: { x: 1 } });
      const admission = admissionOf(msg);
      assert.equal(admission.status, "deferred");
      assert.equal(admission.reason, "frequency_capped");
      assert.equal(admission.deferrals, 1);
      assert.ok(Date.parse(admission.release_at ?? "") >= started + 1900);
      assert.deepEqual(admission.claims, []);
      await sleep(1000);
      assert.equal(flow.out.of("deferred").length, 1, "released exactly once");

      // back round the chain: the gate re-checks it and it takes the re-opened slot
      await sendInOrder(flow, [msg]);
      assert.equal(flow.out.of("allowed").at(-1)?.messageId, "m2");
    });

    it("keeps each recipient's order: a burst of 500 recipients × 3 msgs, the 2nd and 3rd held for one slot, leave by deferred 2nd then 3rd", async () => {
      const flow = await deploy("defer");
      for (let i = 0; i < 1_500; i++) flow.send({ recipient: `r${i % 500}`, channel: "sms", messageId: `m${i}` });
      await flow.out.until(1_500, 10_000);
      assert.equal(flow.out.of("allowed").length, 500);
      const released = flow.out.of("deferred");
      assert.equal(released.length, 1_000);
      const order = new Map<string, number[]>();
      for (const m of released) order.set(String(m.recipient), [...(order.get(String(m.recipient)) ?? []), Number(String(m.messageId).slice(1))]);
      const inverted = [...order].filter(([, ids]) => ids.some((id, i) => i > 0 && id < ids[i - 1]));
      assert.deepEqual(inverted.slice(0, 3), [], `${inverted.length} of 500 recipients' held msgs left out of order`);
    });

    it("sends a msg that cannot be admitted before its expiresAt to skipped with defer_expired", async () => {
      const flow = await deploy("defer");
      await sendInOrder(flow, [
        { recipient: "r", channel: "sms", messageId: "a" },
        { recipient: "r", channel: "sms", messageId: "b", expiresAt: Date.now() + 500 },
      ]);
      const [expired] = flow.out.of("skipped");
      assert.equal(admissionOf(expired).reason, "defer_expired");
      assert.equal((expired?.admission as { error: { code: string } }).error.code, "DEFER_EXPIRED");
    });

    it("a collapsed msg taken just past its own expiresAt leaves by skipped alone: the 4 merged into it go on, the oldest carrying the rest (100 recipients in one tick)", async () => {
      const flow = await deploy("collapse");
      const started = Date.now();
      const recipients = Array.from({ length: 100 }, (_, i) => `r${i}`);
      for (const r of recipients) flow.send({ recipient: r, channel: "sms", messageId: `first-${r}`, topic: "news" });
      await flow.out.until(100, 5000);
      // due when the slot frees (2 s), expiring 300 ms later; the merged msgs have no expiresAt
      for (const r of recipients) {
        flow.send({ recipient: r, channel: "sms", messageId: `head-${r}`, topic: "news", expiresAt: started + 2300 });
        for (let i = 1; i <= 4; i++) flow.send({ recipient: r, channel: "sms", messageId: `n${i}-${r}`, topic: "news" });
      }
      await sleep(started + 1900 - Date.now());
      // a busy event loop: the queue hands the groups out after the heads' expiresAt
      while (Date.now() < started + 2400) { /* busy */ }
      await flow.out.until(300, 5000);
      await sleep(300);
      const skipped = flow.out.of("skipped");
      assert.equal(skipped.length, 100);
      assert.ok(skipped.every((m) => String(m.messageId).startsWith("head-") && admissionOf(m).reason === "defer_expired" && (m as { collapsed?: unknown }).collapsed === undefined), "each head alone");
      const released = flow.out.of("deferred");
      assert.equal(released.length, 100);
      for (const m of released) {
        const r = String(m.recipient);
        assert.deepEqual([m.messageId, ((m as { collapsed?: Msg[] }).collapsed ?? []).map((c) => c.messageId)], [`n1-${r}`, [1, 2, 3, 4].map((i) => `n${i}-${r}`)]);
        assert.equal(admissionOf(m).status, "deferred");
      }
    });

    it("a collapsed msg that comes back round and is held again keeps one flat list: its own merged msgs, then the new ones", async () => {
      const flow = await deploy("collapse");
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "first", topic: "news" }]);
      for (const id of ["c1", "c2", "c3"]) flow.send({ recipient: "r", channel: "sms", messageId: id, topic: "news" });
      await flow.out.until(2, 5000);
      const [group] = flow.out.of("deferred");
      assert.deepEqual(((group as { collapsed?: Msg[] }).collapsed ?? []).map((m) => m.messageId), ["c1", "c2", "c3"]);
      // another msg takes the re-opened slot first: the group comes back round, is capped and held again, and a newer msg merges in
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "blocker", topic: "news" }]);
      flow.send(group);
      await sleep(100);
      flow.send({ recipient: "r", channel: "sms", messageId: "n1", topic: "news" });
      await flow.out.until(4, 6000);
      const again = flow.out.of("deferred")[1] as Msg & { collapsed?: (Msg & { collapsed?: unknown })[] };
      assert.equal(again.messageId, "c1");
      assert.deepEqual((again.collapsed ?? []).map((m) => [m.messageId, m.collapsed]), [["c1", undefined], ["c2", undefined], ["c3", undefined], ["n1", undefined]]);
    });

    it("collapses five capped msgs with one topic into one that takes one slot", async () => {
      const flow = await deploy("collapse");
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "first", topic: "news" }]);
      for (let i = 1; i <= 5; i++) flow.send({ recipient: "r", channel: "sms", messageId: `c${i}`, topic: "news", payload: `update ${i}` });
      flow.send({ recipient: "r", channel: "sms", messageId: "other-topic", topic: "sport" });
      await flow.out.until(3, 6000);
      await sleep(300);
      const released = flow.out.of("deferred");
      assert.equal(released.length, 2, "one msg per collapse key");
      const news = released.find((m) => m.topic === "news") as Msg;
      const collapsed = news.collapsed as Msg[];
      assert.deepEqual(collapsed.map((m) => m.messageId), ["c1", "c2", "c3", "c4", "c5"]);
      assert.equal(news.messageId, "c1");
      // the merged msg goes round once: one slot, not five
      await sendInOrder(flow, [news]);
      assert.equal(flow.out.of("allowed").at(-1)?.messageId, "c1");
    });

    it("keeps collapse keys of different tenants apart, and sends a merged msg past its expiresAt to skipped", async () => {
      const flow = await deploy("collapse");
      await sendInOrder(flow, [
        { org: "a|b", recipient: "c", channel: "sms", messageId: "t1", topic: "x" },
        { org: "a", recipient: "b|c", channel: "sms", messageId: "t2", topic: "x" },
      ]);
      flow.send({ org: "a|b", recipient: "c", channel: "sms", messageId: "h1", topic: "x" });
      flow.send({ org: "a", recipient: "b|c", channel: "sms", messageId: "h2", topic: "x" });
      flow.send({ org: "a", recipient: "b|c", channel: "sms", messageId: "h3", topic: "x", expiresAt: Date.now() + 500 });
      flow.send({ org: "a", recipient: "b|c", channel: "sms", messageId: "h4", topic: "x" });
      await flow.out.until(5, 6000);
      await sleep(300);
      const released = flow.out.of("deferred");
      assert.deepEqual(released.map((m) => m.messageId).sort(), ["h1", "h2"], "one held msg per tenant");
      assert.equal(released.find((m) => m.messageId === "h1")?.collapsed, undefined, "nothing merged into the other tenant");
      assert.deepEqual((released.find((m) => m.messageId === "h2")?.collapsed as Msg[]).map((m) => m.messageId), ["h2", "h4"]);
      const expired = flow.out.of("skipped");
      assert.deepEqual(expired.map((m) => [m.messageId, admissionOf(m).reason]), [["h3", "defer_expired"]]);
    });

    it("a gate redeployed in another mode (record) still lets out the msgs it held, by deferred: one held on its own, then 300 held in one tick", async () => {
      let flow = await deploy("defer");
      const recipients = 301;
      for (let i = 0; i < recipients; i++) flow.send({ recipient: `mode${i}`, channel: "sms", messageId: `first${i}` });
      await flow.out.until(recipients, 5000);
      // one held on its own, then 300 in one tick
      flow.send({ recipient: "mode0", channel: "sms", messageId: "held0", payload: "held 0" });
      await sleep(100);
      for (let i = 1; i < recipients; i++) flow.send({ recipient: `mode${i}`, channel: "sms", messageId: `held${i}`, payload: `held ${i}` });
      await sleep(300);
      assert.equal(flow.out.of("allowed").length, recipients);
      assert.equal(flow.out.total(), recipients, `every second msg is held, none out yet (${flow.out.of("deferred").length} deferred, ${flow.out.of("skipped").length} skipped)`);
      await helper.unload();
      flow = await deploy("defer", { mode: "record" });
      await flow.out.until(recipients, 8000);
      await sleep(300);
      const released = flow.out.of("deferred");
      assert.equal(released.length, recipients, "each held msg once");
      assert.deepEqual(new Set(released.map((m) => m.messageId)), new Set(Array.from({ length: recipients }, (_, i) => `held${i}`)));
      assert.ok(released.every((m) => admissionOf(m).status === "deferred" && admissionOf(m).reason === "frequency_capped"));
      assert.equal(flow.out.of("caught").length, 0);
    });

    it("keeps held msgs across a redeploy and releases them afterwards", async () => {
      let flow = await deploy("defer");
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "x1" }]);
      flow.send({ recipient: "r", channel: "sms", messageId: "x2", payload: "survivor" });
      await sleep(300);
      await helper.unload();
      flow = await deploy("defer");
      await flow.out.until(1, 6000);
      const [released] = flow.out.of("deferred");
      assert.equal(released?.messageId, "x2");
      assert.equal(released?.payload, "survivor");
    });
  });
}

describe("frequency-cap-gate: a calendar cap holds until the recipient's local midnight plus jitter", function () {
  this.timeout(30_000);
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());

  it("spreads the release over [midnight, midnight + jitter) in msg.timezone, and names the reset in retry_after", async () => {
    // "a" fills Kathmandu's day and "b" is held until its end: both sent, and the midnight read, in one Kathmandu day,
    // not across its midnight (18:15 UTC), where "b" would be judged in a new day and go out
    const midnight = await clearOfPeriodEnd("calendar_day", "Asia/Kathmandu", 5_000);
    const flow = await deployGateFlow({
      store: "memory", config: { keyPrefix: uniquePrefix("cal") }, gate: { deferMax: 3 * 86400, jitter: 600 },
      rules: [{ id: "daily", scope: "channel", channel: "sms", max_count: 1, window_seconds: 86400, window_type: "calendar_day", disposition: "defer" }],
    });
    await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "a", timezone: "Asia/Kathmandu" }]);
    flow.send({ recipient: "r", channel: "sms", messageId: "b", timezone: "Asia/Kathmandu" });
    await sleep(200);
    const service = (helper.getNode("cfg0") as unknown as { service: import("../../src/core/capService").CapService }).service;
    const queue = service.deferrals.queueOf("gate0");
    assert.equal(await queue.size(), 1);
    const due = await queue.nextDueAt();
    assert.ok(due !== null && due >= midnight && due < midnight + 600_000, `due ${due && new Date(due).toISOString()} vs midnight ${new Date(midnight).toISOString()}`);
  });
});

describe("deferMax is each gate's own: a msg another gate held is not out of time at the next one", function () {
  this.timeout(20_000);
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());

  it("gate A holds a msg 3 s, then gate B (deferMax 4 s) holds it 3 s more: out of B's deferred, not skipped defer_expired (200 recipients in one tick)", async () => {
    const keyPrefix = uniquePrefix("defermax");
    const cap = (id: string, seconds: number) => ({ id, scope: "channel", channel: "sms", max_count: 1, window_seconds: seconds, disposition: "defer" });
    await helper.load(gateNodes, [
      TAB,
      { id: "cfgA", type: "cap-config", store: "memory", keyPrefix: `${keyPrefix}-a`, rules: [cap("a", 3)] },
      { id: "cfgB", type: "cap-config", store: "memory", keyPrefix: `${keyPrefix}-b`, rules: [cap("b", 6)] },
      // A's deferred output goes back to A (the chain's entry, SPEC §6)
      flowNode({ id: "gateA", type: "frequency-cap-gate", config: "cfgA", deferMax: 60, wires: [["gateB"], ["skipped"], ["gateA"]] }),
      flowNode({ id: "gateB", type: "frequency-cap-gate", config: "cfgB", deferMax: 4, wires: [["allowed"], ["skipped"], ["deferred"]] }),
      ...["allowed", "skipped", "deferred"].map((id) => flowNode({ id, type: "helper" })),
    ]);
    const out = new Collector(["allowed", "skipped", "deferred"]);
    const recipients = Array.from({ length: 200 }, (_, i) => `r${i}`);
    for (const r of recipients) helper.getNode("gateA")?.receive({ recipient: r, channel: "sms", messageId: `m0-${r}` });
    await out.until(200, 5000);
    // held by A until a's slot frees (3 s); then B's slot is taken until 6 s: B holds it 3 s, within its own 4 s
    for (const r of recipients) helper.getNode("gateA")?.receive({ recipient: r, channel: "sms", messageId: `m1-${r}` });
    await out.until(400, 12_000);
    assert.deepEqual(out.of("skipped").slice(0, 3).map((m) => [m.messageId, reasonOf(m)]), []);
    const released = out.of("deferred");
    assert.equal(released.length, 200);
    assert.ok(released.every((m) => String(m.messageId).startsWith("m1-") && (m.admission as { deferrals: number }).deferrals === 2), "each held twice in all");
  });
});
