import assert from "node:assert/strict";
import { CapService } from "../../src/core/capService";
import { parseSend } from "../../src/core/send";
import type { ClaimOutcome, ClaimRequest, Settled } from "../../src/core/store/admissionStore";
import { dropPrefix, REDIS_URL, redisClient, sleep, uniquePrefix } from "../support/redis";
import { createCapService } from "../../src/service/createCapService";

const MAX = 50;
const RULES = [
  { id: "ad-total", scope: "global", counts: "total", per: ["ad_id"], max_count: MAX, window_seconds: 1, window_type: "lifetime" },
  { id: "daily", scope: "global", max_count: 5, window_seconds: 86_400 },
];

/**
 * Another holder's call takes back a lease not renewed for its idle time (a
 * second): a cap-config whose sends hold reserved slots while their recipients'
 * caps are slow to answer renews its lease meanwhile, so it keeps them.
 */
describe("total caps: a lease whose sends are slow to commit is renewed, not taken back as idle", function () {
  this.timeout(60_000);
  const log = { warn: () => undefined, error: () => undefined };

  for (const count of [1, 20]) {
    it(`${count === 1 ? "one send" : `a burst of ${count}`} on instance H, its recipients' claims answered after 1.5 s, while instance O sends 100: H keeps its slots, and the two never pass ${MAX}`, async () => {
      const keyPrefix = uniquePrefix("lease-renew");
      const config = { store: "redis", redisUrl: REDIS_URL, keyPrefix, failMode: "open", timeoutMs: 5000, rules: RULES };
      const held = createCapService(config, {}, log);
      const other = createCapService(config, {}, log);
      const redis = redisClient();
      try {
        await sleep(300);
        // H's store answers its recipients' claims 1.5 s late; its total's slots are reserved before they are asked
        const store = held.store as unknown as { claim(requests: readonly ClaimRequest[]): Promise<Settled<ClaimOutcome>[]> };
        const answer = store.claim.bind(store);
        store.claim = async (requests) => {
          await sleep(1500);
          return answer(requests);
        };
        const send = (service: CapService, recipient: string, messageId: string) =>
          service.engine.claim(parseSend({ recipient, channel: "sms", messageId, attributes: { ad_id: "ad1" } }, service.sendRules));
        const fromH = Array.from({ length: count }, (_, i) => send(held, `h${i}`, `hm${i}`));
        await sleep(1200);
        const fromO: Promise<{ kind: string }>[] = [];
        for (let round = 0; round < 20; round++) {
          for (let i = 0; i < 5; i++) fromO.push(send(other, `o${round}-${i}`, `om${round}-${i}`));
          await sleep(20);
        }
        const hDecisions = await Promise.all(fromH);
        const h = hDecisions.filter((d) => d.kind === "allowed").length;
        const o = (await Promise.all(fromO)).filter((d) => d.kind === "allowed").length;
        assert.equal(h, count, `H admitted ${h} of ${count}: its reserved slots were taken back as idle`);
        assert.equal(o, MAX - count, "O has the rest");
        const usage = (await held.engine.usage(parseSend({ recipient: "x", channel: "sms", messageId: "x", attributes: { ad_id: "ad1" } }, held.sendRules)))
          .find((u) => u.cap_id === "ad-total");
        assert.equal(usage?.count, MAX, "counted once each, never past the max");
      } finally {
        await held.close();
        await other.close();
        await dropPrefix(redis, keyPrefix);
        await redis.quit();
      }
    });
  }
});
