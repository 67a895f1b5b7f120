import assert from "node:assert/strict";
import type Redis from "ioredis";
import { helper, type Msg } from "../support/nodeRed";
import { deployChain, push } from "../support/chainFlow";
import { deployGateFlow, type GateFlow } from "../support/gateFlow";
import { dropPrefix, redisClient, uniquePrefix } from "../support/redis";

const DAY = 86400;
const LIMIT = 1024;
/** 2 bytes a character in UTF-8: a limit in characters would let it through */
const overByBytes = "é".repeat(LIMIT / 2 + 1);

async function longestKey(redis: Redis, prefix: string): Promise<number> {
  let longest = 0;
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    for (const key of keys) longest = Math.max(longest, Buffer.byteLength(key));
  } while (cursor !== "0");
  return longest;
}

async function settle(flow: GateFlow, count: number): Promise<void> {
  await flow.out.until(count, 20_000);
}

for (const store of ["memory", "redis"] as const) {
  describe(`send fields longer than ${LIMIT} bytes go to Catch (${store} store)`, function () {
    this.timeout(60_000);
    const redis = redisClient();
    let keyPrefix: string;
    before(() => helper.startServer());
    after(async () => {
      await helper.stopServer();
      await redis.quit();
    });
    beforeEach(() => { keyPrefix = uniquePrefix(`len-${store}`); });
    afterEach(async () => {
      await helper.unload();
      await dropPrefix(redis, keyPrefix);
    });

    const deploy = () => deployGateFlow({
      store, config: { keyPrefix, timeoutMs: 5000 },
      rules: [{ id: "cap", scope: "channel", channel: "sms", max_count: 5, window_seconds: DAY, per: ["campaign"] }],
    });

    it("refuses a 10 MB recipient naming the field, msg intact, and no key grows with it", async () => {
      const flow = await deploy();
      const huge = "x".repeat(10 * 1024 * 1024);
      flow.send({ recipient: huge, channel: "sms", messageId: "big", attributes: { campaign: "c" } });
      await settle(flow, 1);
      const [caught] = flow.out.of("caught");
      assert.match(String((caught?.error as { message: string }).message), /^recipient: must be at most 1024 bytes \(UTF-8\), got 10485760/);
      assert.equal(caught?.recipient, huge, "the msg reaches Catch as it came in");
      assert.equal(caught?.admission, undefined);
      if (store === "redis") assert.ok(await longestKey(redis, keyPrefix) < 4096);
    });

    it("names each field over the limit in bytes (org, messageId, category, tier, attribute name and value, timezone)", async () => {
      const flow = await deploy();
      const base = { recipient: "r", channel: "sms", attributes: { campaign: "c" } };
      const bad: [string, Record<string, unknown>][] = [
        ["recipient", { recipient: overByBytes }],
        ["org", { org: overByBytes }],
        ["messageId", { messageId: overByBytes }],
        ["category", { category: overByBytes }],
        ["tier", { tier: overByBytes }],
        ["attributes.campaign", { attributes: { campaign: overByBytes } }],
        ["attributes", { attributes: { [overByBytes]: "v" } }],
        ["timezone", { timezone: overByBytes }],
      ];
      for (const [, over] of bad) flow.send({ ...base, messageId: "m", ...over });
      await settle(flow, bad.length);
      const messages = flow.out.of("caught").map((m) => String((m.error as { message: string }).message));
      assert.equal(messages.length, bad.length, messages.join("\n"));
      bad.forEach(([field], i) => assert.ok(messages[i]?.startsWith(`${field}`) && /at most 1024 bytes/.test(messages[i] ?? ""), messages[i]));

      // exactly at the limit is fine
      flow.send({ ...base, recipient: "é".repeat(LIMIT / 2), messageId: "a".repeat(LIMIT), org: "o".repeat(LIMIT), attributes: { campaign: "c".repeat(LIMIT) } });
      await settle(flow, bad.length + 1);
      assert.equal(flow.out.of("allowed").length, 1);
    });

    it("refuses the over-long half of a burst of 2,000 msgs in one tick, and admits the rest", async () => {
      const flow = await deploy();
      const msgs: Msg[] = [];
      for (let i = 0; i < 2000; i++) {
        const long = i % 2 === 1;
        msgs.push({ recipient: long ? `${"r".repeat(LIMIT)}${i}` : `r${i}`, channel: "sms", messageId: `b${i}`, attributes: { campaign: "c" } });
      }
      for (const m of msgs) flow.send(m);
      await settle(flow, 2000);
      assert.equal(flow.out.of("allowed").length, 1000);
      assert.equal(flow.out.of("caught").length, 1000);
      assert.ok(flow.out.of("caught").every((m) => /^recipient: must be at most 1024 bytes/.test(String((m.error as { message: string }).message))));
      if (store === "redis") assert.ok(await longestKey(redis, keyPrefix) < 4096);
    });

    it("refuses a check whose candidate carries an over-long attribute, naming it", async () => {
      const flow = await deployGateFlow({
        store, config: { keyPrefix, timeoutMs: 5000 }, gate: { mode: "check" },
        rules: [{ id: "cap", scope: "channel", channel: "sms", max_count: 5, window_seconds: DAY, per: ["campaign"] }],
      });
      flow.send({ recipient: "r", channel: "sms", messageId: "c", candidates: [{ id: "a", campaign: "x" }, { id: "b", campaign: overByBytes }] });
      await settle(flow, 1);
      assert.match(String((flow.out.of("caught")[0]?.error as { message: string }).message), /candidates\[1\]\.campaign: must be at most 1024 bytes/);
    });

    it("refuses an over-long recipient or org in the block list (control msg and admin import)", async () => {
      const chain = await deployChain({ store, keyPrefix, rules: [] });
      await push(chain, "sup", { topic: "suppress", recipient: overByBytes, channel: "sms" });
      assert.match(String((chain.out.of("caught")[0]?.error as { message: string }).message), /recipient: must be at most 1024 bytes/);
      const res = await helper.request().post("/frequency-cap/cfgA/suppressions").send([{ recipient: "ok" }, { recipient: "x", org: overByBytes }]);
      assert.equal(res.status, 400, res.text);
      assert.deepEqual((res.body as { details: string[] }).details.length, 1);
      assert.match((res.body as { details: string[] }).details[0] ?? "", /row 2: org: must be at most 1024 bytes/);
    });
  });
}
