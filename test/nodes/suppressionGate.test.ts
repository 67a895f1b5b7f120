import assert from "node:assert/strict";
import { useUserDir } from "../support/userDir";
import { helper, type Msg } from "../support/nodeRed";
import { deployChain, push } from "../support/chainFlow";
import { sleep, uniquePrefix } from "../support/redis";
import { STORE_KINDS, SuiteStore } from "../support/suiteStore";

type Admission = {
  status: string; reason?: string; cap_id?: string; claims: { kind: string }[];
  trail: { gate: string; status: string; refunded?: number }[];
  suppression?: { channel: string; reason?: string; at?: string }; duplicate_of?: string; retry_after_seconds?: number;
};
const admissionOf = (m: Msg | undefined) => m?.admission as Admission;

/** Waits until the block list holds `count` entries (a control msg's write has landed), read through the admin API. */
async function listed(count: number, config = "cfgA"): Promise<void> {
  let entries = -1;
  for (let i = 0; i < 200; i++) {
    const res = await helper.request().get(`/frequency-cap/${config}/suppressions`);
    entries = (res.body as { entries?: unknown[] }).entries?.length ?? -1;
    if (entries === count) return;
    await sleep(10);
  }
  throw new Error(`the block list holds ${entries} entries, not ${count}`);
}
const reasons = (list: Msg[]) => list.map((m) => admissionOf(m).reason);

for (const kind of STORE_KINDS) {
  describe(`suppression-gate and the admission chain (${kind} store)`, function () {
    this.timeout(30_000);
    let keyPrefix: string;
    const store = new SuiteStore(kind);
    store.hooks();
    useUserDir("user");
    before(() => helper.startServer());
    after(() => helper.stopServer());
    beforeEach(() => { keyPrefix = uniquePrefix(`sup-${kind}`); });
    afterEach(async () => {
      await helper.unload();
      await store.drop(keyPrefix);
    });

    const oneASms = [{ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: 3600 }];

    it("skips an opted-out recipient before the cap, consuming no slot; unsuppress lets it through", async () => {
      const chain = await deployChain({ store, keyPrefix, rules: oneASms });
      chain.node("sup").receive({ topic: "suppress", recipient: "bob", channel: "sms", reason: "STOP" });
      await listed(1);
      assert.equal(chain.out.total(), 0, "a control msg is not passed on");
      await push(chain, "sup", { recipient: "bob", channel: "sms", messageId: "m1", payload: "hi" });
      const [optedOut] = chain.out.of("skipped");
      assert.equal(admissionOf(optedOut).reason, "opted_out");
      assert.equal(admissionOf(optedOut).suppression?.reason, "STOP");
      assert.equal(admissionOf(optedOut).suppression?.channel, "sms");
      assert.ok(Date.parse(admissionOf(optedOut).suppression?.at ?? "") > Date.now() - 60_000);

      chain.node("sup").receive({ topic: "unsuppress", recipient: "bob", channel: "sms" });
      await listed(0);
      await push(chain, "sup", { recipient: "bob", channel: "sms", messageId: "m2", payload: "hello" });
      await push(chain, "sup", { recipient: "bob", channel: "sms", messageId: "m3", payload: "hello again" });
      // the cap of one had room for m2: the opted-out m1 never took its slot
      assert.deepEqual(chain.out.of("sent").map((m) => m.messageId), ["m2"]);
      assert.deepEqual(reasons(chain.out.of("skipped")), ["opted_out", "frequency_capped"]);
    });

    it("an opt-out control msg holds for every msg after it in the same tick: 2,000 sends to the recipient behind it, none passes", async () => {
      const chain = await deployChain({ store, keyPrefix, rules: [], duplicateWindow: 0 });
      // the store connected and answering (a msg passed), as it is for a flow that has run a while
      await push(chain, "sup", { recipient: "someone", channel: "sms", messageId: "warm", payload: "hi" });
      chain.node("sup").receive({ topic: "suppress", recipient: "victim", channel: "sms", reason: "STOP" });
      for (let i = 0; i < 2_000; i++) chain.node("sup").receive({ recipient: "victim", channel: "sms", messageId: `v${i}`, payload: `x${i}` });
      await chain.out.until(2_001, 20_000);
      const passed = chain.out.of("sent").map((m) => String(m.messageId)).filter((id) => id !== "warm");
      assert.deepEqual(passed.slice(0, 3), [], `${passed.length} sends after the opt-out passed (its write went out behind their checks)`);
      assert.ok(chain.out.of("skipped").every((m) => admissionOf(m).reason === "opted_out"));
      assert.equal(chain.out.of("caught").length, 0);
    });

    it("lets '*' cover every channel while a channel entry covers only its channel", async () => {
      const chain = await deployChain({ store, keyPrefix, rules: [] });
      chain.node("sup").receive({ topic: "suppress", recipient: "all-out" });
      chain.node("sup").receive({ topic: "suppress", recipient: "sms-out", channel: "sms" });
      await listed(2);
      for (const [recipient, channel] of [["all-out", "sms"], ["all-out", "email"], ["sms-out", "sms"], ["sms-out", "email"]]) {
        await push(chain, "sup", { recipient, channel, messageId: `${recipient}-${channel}`, payload: channel });
      }
      assert.deepEqual(chain.out.of("skipped").map((m) => m.messageId), ["all-out-sms", "all-out-email", "sms-out-sms"]);
      assert.deepEqual(chain.out.of("sent").map((m) => m.messageId), ["sms-out-email"]);
      assert.equal(admissionOf(chain.out.of("skipped")[0]).suppression?.channel, "*");
    });

    it("skips the same body to the same recipient and channel within the window, whatever its key order", async () => {
      const chain = await deployChain({ store, keyPrefix, rules: [], duplicateWindow: 1 });
      const body = { text: "Sale!", meta: { a: 1, b: [1, 2] } };
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "d1", payload: body });
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "d2", payload: { meta: { b: [1, 2], a: 1 }, text: "Sale!" } });
      await push(chain, "sup", { recipient: "r", channel: "email", messageId: "d3", payload: body });
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "d1", payload: body });
      const [duplicate] = chain.out.of("skipped");
      assert.equal(duplicate?.messageId, "d2");
      assert.equal(admissionOf(duplicate).reason, "duplicate_content");
      assert.equal(admissionOf(duplicate).duplicate_of, "d1");
      assert.deepEqual(chain.out.of("sent").map((m) => m.messageId), ["d1", "d3", "d1"], "another channel, and a retry of d1, are not duplicates");
      await sleep(1100);
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "d4", payload: body });
      assert.equal(chain.out.of("sent").length, 4, "after the window the body may go again");
    });

    it("gives back the cap slot and the duplicate mark when a later gate refuses the msg", async () => {
      const chain = await deployChain({
        store, keyPrefix, rules: oneASms,
        laterRules: [{ id: "later", scope: "channel", channel: "sms", max_count: 1, window_seconds: 3600, applies_to_categories: ["blocked-later"] }],
      });
      // fill the later gate's cap for category blocked-later with a send from elsewhere
      await push(chain, "capB", { recipient: "r", channel: "sms", category: "blocked-later", messageId: "filler" });
      await push(chain, "sup", { recipient: "r", channel: "sms", category: "blocked-later", messageId: "x1", payload: "Body" });
      const refused = chain.out.of("skipped")[0];
      assert.equal(admissionOf(refused).cap_id, "later");
      assert.deepEqual(admissionOf(refused).claims, [], "what earlier gates claimed was given back");
      assert.equal(admissionOf(refused).trail.at(-1)?.refunded, 2);
      // the same body with a new id: not a duplicate, and capA's only slot is free again
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "x2", payload: "Body" });
      assert.deepEqual(chain.out.of("sent").map((m) => m.messageId), ["filler", "x2"]);
    });

    it("gives the slot back through release mode when the provider fails", async () => {
      const chain = await deployChain({ store, keyPrefix, rules: oneASms });
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "p1", payload: "first" });
      const delivered = chain.out.of("sent")[0];
      assert.equal(admissionOf(delivered).claims.length, 2);
      await push(chain, "release", delivered);
      assert.equal(admissionOf(chain.out.of("released")[0]).trail.at(-1)?.status, "released");
      assert.deepEqual(admissionOf(chain.out.of("released")[0]).claims, []);
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "p2", payload: "first" });
      assert.deepEqual(chain.out.of("sent").map((m) => m.messageId), ["p1", "p2"], "p1's slot and mark were free again");
    });

    it("gives nothing back when a retry of a delivered msg is released: the first attempt still holds the slot and mark", async () => {
      const chain = await deployChain({ store, keyPrefix, rules: oneASms });
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "m1", payload: "once" });
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "m1", payload: "once" });
      const retry = chain.out.of("sent")[1];
      // it holds the first attempt's mark and slot beside it (two copies in flight share them): its give-back lets go of its hold only
      assert.deepEqual(admissionOf(retry).claims.map((c) => (c).kind).sort(), ["cap", "dup"]);
      await push(chain, "release", retry);
      assert.equal(admissionOf(chain.out.of("released")[0]).trail.at(-1)?.refunded, 0);
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "m2", payload: "once" });
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "m3", payload: "other" });
      assert.deepEqual(reasons(chain.out.of("skipped")), ["duplicate_content", "frequency_capped"]);
    });

    it("keeps the block list across a redeploy", async () => {
      let chain = await deployChain({ store, keyPrefix, rules: [] });
      chain.node("sup").receive({ topic: "suppress", recipient: "kept", reason: "complaint" });
      await listed(1);
      await helper.unload();
      chain = await deployChain({ store, keyPrefix, rules: [] });
      await push(chain, "sup", { recipient: "kept", channel: "push", messageId: "k1", payload: "x" });
      assert.equal(chain.out.of("skipped").length, 1, "listed before the redeploy, so enforced after it");
      assert.equal(admissionOf(chain.out.of("skipped")[0]).suppression?.reason, "complaint");
    });

    it("warns when an exempt tier is skipped, and still skips it", async () => {
      const chain = await deployChain({ store, keyPrefix, rules: [] });
      chain.node("sup").receive({ topic: "suppress", recipient: "vip" });
      await listed(1);
      await push(chain, "sup", { recipient: "vip", channel: "sms", tier: "P0", messageId: "t1", payload: "x" });
      assert.equal(chain.out.of("skipped").length, 1);
      const spy = helper.log() as unknown as { args: [{ level: number; msg: unknown }][] };
      assert.ok(spy.args.some(([e]) => e.level === 30 && /exempt P0 msg was skipped by suppression-gate \(opted_out\)/.test(String(e.msg))));
    });

    it("sends a control msg without a recipient to Catch", async () => {
      const chain = await deployChain({ store, keyPrefix, rules: [] });
      await push(chain, "sup", { topic: "suppress", channel: "sms" });
      assert.match(String((chain.out.of("caught")[0]?.error as { message: string }).message), /recipient: is required/);
    });

    it("imports 10,000 entries through the admin API in one call and enforces them all", async () => {
      const chain = await deployChain({ store, keyPrefix, rules: [] });
      const entries = Array.from({ length: 10_000 }, (_, i) => ({ recipient: `bulk-${i}`, channel: i % 2 ? "sms" : "*", reason: "import" }));
      const started = Date.now();
      const res = await helper.request().post("/frequency-cap/cfgA/suppressions").send(entries);
      const importMs = Date.now() - started;
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(res.body, { suppressed: 10_000 });
      assert.ok(importMs < 10_000, `import took ${importMs} ms`);

      let listed = 0;
      let cursor = "0";
      do {
        const page = await helper.request().get("/frequency-cap/cfgA/suppressions").query({ cursor, count: "2000" });
        const body = page.body as { cursor: string; entries: unknown[] };
        listed += body.entries.length;
        cursor = body.cursor;
      } while (cursor !== "0");
      assert.equal(listed, 10_000);

      const probes = Array.from({ length: 300 }, (_, i) => i * 33);
      for (const i of probes) chain.node("sup").receive({ recipient: `bulk-${i}`, channel: "sms", messageId: `b${i}`, payload: "x" });
      await chain.out.until(probes.length, 20_000);
      assert.equal(chain.out.of("skipped").length, probes.length);
      assert.ok(reasons(chain.out.of("skipped")).every((r) => r === "opted_out"));
    });

    it("imports CSV, refuses a body with bad rows naming each (changing nothing), deletes, and 404s an unknown config", async () => {
      const chain = await deployChain({ store, keyPrefix, rules: [] });
      const csv = "recipient,channel,reason\ncsv-1,sms,\"STOP, please\"\ncsv-2,,complaint\n";
      const imported = await helper.request().post("/frequency-cap/cfgA/suppressions").set("content-type", "text/csv").send(csv);
      assert.equal(imported.status, 201, imported.text);
      const bad = await helper.request().post("/frequency-cap/cfgA/suppressions")
        .send([{ recipient: "ok-1" }, { channel: "sms" }, { recipient: "x", channel: "pigeon" }]);
      assert.equal(bad.status, 400);
      const details = (bad.body as { details: string[] }).details;
      assert.equal(details.length, 2);
      assert.match(details[0] ?? "", /row 2: .*recipient/);
      assert.match(details[1] ?? "", /row 3: .*channel/);
      await push(chain, "sup", { recipient: "ok-1", channel: "sms", messageId: "o1", payload: "x" });
      assert.equal(chain.out.of("sent").length, 1, "nothing of the refused body was imported");

      await push(chain, "sup", { recipient: "csv-1", channel: "sms", messageId: "c1", payload: "x" });
      assert.equal(admissionOf(chain.out.of("skipped")[0]).suppression?.reason, "STOP, please");
      const removed = await helper.request().delete("/frequency-cap/cfgA/suppressions").query({ recipient: "csv-1", channel: "sms" });
      assert.equal(removed.status, 200, removed.text);
      await push(chain, "sup", { recipient: "csv-1", channel: "sms", messageId: "c2", payload: "x" });
      assert.equal(chain.out.of("sent").length, 2);
      assert.equal((await helper.request().get("/frequency-cap/nope/suppressions")).status, 404);
    });
  });
}
