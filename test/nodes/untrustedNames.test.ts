import assert from "node:assert/strict";
import { helper, type Msg } from "../support/nodeRed";
import { deployGateFlow, sendInOrder, type GateFlow } from "../support/gateFlow";
import { dropPrefix, redisClient, uniquePrefix } from "../support/redis";

const DAY = 86400;
/** Names every plain object inherits: a lookup by them must never find the inherited member. */
const PROTO_NAMES = ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"];

/** Sends every msg in the same tick (a burst), then waits until each has left by some output. */
async function burst(flow: GateFlow, msgs: Record<string, unknown>[], timeoutMs = 20_000): Promise<void> {
  const before = flow.out.total();
  for (const msg of msgs) flow.send(msg);
  await flow.out.until(before + msgs.length, timeoutMs);
}

for (const store of ["memory", "redis"] as const) {
  describe(`user data named like Object.prototype members (${store} store)`, function () {
    this.timeout(60_000);
    const redis = redisClient();
    let keyPrefix: string;
    before(() => helper.startServer());
    after(async () => {
      await helper.stopServer();
      await redis.quit();
    });
    beforeEach(() => { keyPrefix = uniquePrefix(`proto-${store}`); });
    afterEach(async () => {
      await helper.unload();
      await dropPrefix(redis, keyPrefix);
    });

    const deploy = (rules: object[]) => deployGateFlow({ store, config: { keyPrefix, timeoutMs: 5000 }, rules });

    it("enforces caps whose ids are constructor, toString, __proto__, hasOwnProperty, valueOf (single msgs)", async () => {
      const flow = await deploy(PROTO_NAMES.map((id) => ({ id, scope: "channel", channel: "sms", max_count: 1, window_seconds: DAY, applies_to_categories: [id] })));
      for (const id of PROTO_NAMES) {
        await sendInOrder(flow, [1, 2].map((n) => ({ recipient: "r", channel: "sms", category: id, messageId: `${id}-${n}` })));
      }
      assert.deepEqual(flow.out.of("allowed").map((m) => m.messageId), PROTO_NAMES.map((id) => `${id}-1`));
      assert.deepEqual(flow.out.of("skipped").map((m) => (m.admission as { cap_id: string }).cap_id), PROTO_NAMES);
      for (const m of flow.out.of("skipped")) assert.equal((m.admission as { max_count: number }).max_count, 1);
    });

    it("enforces a cap named constructor on a burst of 4,000 msgs in one tick, and honours recipientLimits named like it", async () => {
      const flow = await deploy([{ id: "constructor", scope: "channel", channel: "sms", max_count: 2, window_seconds: DAY }]);
      const msgs: Record<string, unknown>[] = [];
      for (let r = 0; r < 1000; r++) {
        for (let n = 0; n < 4; n++) msgs.push({ recipient: `u${r}`, channel: "sms", messageId: `u${r}-${n}` });
      }
      await burst(flow, msgs);
      assert.equal(flow.out.of("allowed").length, 2000);
      assert.equal(flow.out.of("skipped").length, 2000);
      // the recipient's own limit under the cap's id lowers it; one named __proto__ is an ordinary (unknown) cap id
      await sendInOrder(flow, [
        { recipient: "low", channel: "sms", messageId: "l1", recipientLimits: JSON.parse('{"constructor": 1, "__proto__": 0}') },
        { recipient: "low", channel: "sms", messageId: "l2", recipientLimits: JSON.parse('{"constructor": 1, "__proto__": 0}') },
      ]);
      assert.deepEqual([flow.out.of("allowed").at(-1)?.messageId, flow.out.of("skipped").at(-1)?.messageId], ["l1", "l2"]);
    });

    it("splits by a per attribute named like a prototype member, and does not count sends that lack it", async () => {
      const flow = await deploy(["constructor", "__proto__", "toString"].map((name) => ({
        id: `per-${name}`, scope: "channel", channel: "push", max_count: 1, window_seconds: DAY, per: [name],
      })));
      const none = Array.from({ length: 500 }, (_, i) => ({ recipient: "r", channel: "push", messageId: `none-${i}` }));
      await burst(flow, none);
      assert.equal(flow.out.of("allowed").length, 500, "a send without the attribute is not counted by a per cap");
      for (const name of ["constructor", "__proto__", "toString"]) {
        const attributes = (value: string) => JSON.parse(`{${JSON.stringify(name)}: ${JSON.stringify(value)}}`) as Record<string, string>;
        await sendInOrder(flow, [
          { recipient: "r", channel: "push", messageId: `${name}-a1`, attributes: attributes("a") },
          { recipient: "r", channel: "push", messageId: `${name}-a2`, attributes: attributes("a") },
          { recipient: "r", channel: "push", messageId: `${name}-b1`, attributes: attributes("b") },
        ]);
        const skipped = flow.out.of("skipped").at(-1) as Msg;
        assert.equal(skipped.messageId, `${name}-a2`);
        assert.equal((skipped.admission as { cap_id: string }).cap_id, `per-${name}`);
        assert.equal(flow.out.of("allowed").at(-1)?.messageId, `${name}-b1`);
      }
      assert.equal(flow.out.of("caught").length, 0);
    });

    it("matches a cap to an attribute named like a prototype member only when the send carries it", async () => {
      const flow = await deploy([{ id: "m", scope: "channel", channel: "push", max_count: 1, window_seconds: DAY, match: { constructor: ["x"], toString: ["y"] } }]);
      await sendInOrder(flow, [
        { recipient: "r", channel: "push", messageId: "n1" },
        { recipient: "r", channel: "push", messageId: "n2" },
        { recipient: "r", channel: "push", messageId: "x1", attributes: { constructor: "x", toString: "y" } },
        { recipient: "r", channel: "push", messageId: "x2", attributes: { constructor: "x", toString: "y" } },
      ]);
      assert.deepEqual(flow.out.of("allowed").map((m) => m.messageId), ["n1", "n2", "x1"]);
      assert.deepEqual(flow.out.of("skipped").map((m) => m.messageId), ["x2"]);
    });

    it("keeps orgs and recipients named like prototype members apart", async () => {
      const flow = await deploy([{ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: DAY }]);
      const sends = PROTO_NAMES.flatMap((name) => [
        { org: name, recipient: name, channel: "sms", messageId: `${name}-1` },
        { org: name, recipient: name, channel: "sms", messageId: `${name}-2` },
      ]);
      await sendInOrder(flow, sends);
      assert.deepEqual(flow.out.of("allowed").map((m) => m.messageId), PROTO_NAMES.map((n) => `${n}-1`));
      assert.deepEqual(flow.out.of("skipped").map((m) => m.messageId), PROTO_NAMES.map((n) => `${n}-2`));
    });
  });
}
