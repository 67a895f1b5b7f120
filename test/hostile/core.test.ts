import assert from "node:assert/strict";
import fc from "fast-check";
import { SendFieldError } from "../../src/core/errors";
import { capCounterField, capCounterKey, recipientHashTag, recipientToken } from "../../src/core/caps/keys";
import { parseSend } from "../../src/core/send";
import { DEFAULT_CHANNELS } from "../../src/core/channels";
import { duplicateMarkKey, blockListKey } from "../../src/core/suppression/suppressionKeys";
import { REDIS_URL, dropPrefix, redisClient, uniquePrefix } from "../support/redis";
import { hostileString, rawSend } from "./arbitraries";
import { createCapService } from "../../src/service/createCapService";

const RULES = { channels: DEFAULT_CHANNELS, defaultOrg: "default", requireTier: false };
const FIELDS = /^(recipient|channel|category|tier|messageId|org|timezone|expiresAt|attributes|recipientLimits)(\.|$)/;

describe("hostile input, property-based (fast-check)", function () {
  this.timeout(120_000);

  it("a send is either read or refused with an error naming the field, never anything else", () => {
    fc.assert(fc.property(rawSend, (raw) => {
      try {
        const send = parseSend(raw, RULES);
        assert.equal(typeof send.recipient, "string");
        assert.equal(typeof send.messageId, "string");
      } catch (err) {
        if (!(err instanceof SendFieldError)) throw err;
        assert.match(err.field, FIELDS, err.message);
        assert.ok(err.message.startsWith(`${err.field}:`), err.message);
      }
    }), { numRuns: 3000 });
  });

  it("no two distinct (org, recipient, cap, per values) share a counter, and a recipient's keys share one hash tag", () => {
    const tuple = fc.tuple(hostileString, hostileString, hostileString, fc.array(hostileString, { maxLength: 3 }));
    fc.assert(fc.property(tuple, tuple, ([o1, r1, c1, p1], [o2, r2, c2, p2]) => {
      const same = o1 === o2 && r1 === r2 && c1 === c2 && p1.length === p2.length && p1.every((v, i) => v === p2[i]);
      const a = `${capCounterKey("fc", o1, r1)}\u0000${capCounterField(c1, p1)}`;
      const b = `${capCounterKey("fc", o2, r2)}\u0000${capCounterField(c2, p2)}`;
      assert.equal(a === b, same, `${JSON.stringify([o1, r1, c1, p1])} vs ${JSON.stringify([o2, r2, c2, p2])}`);
      const tag = recipientHashTag(o1, r1);
      for (const key of [capCounterKey("fc", o1, r1), blockListKey("fc", o1, r1), duplicateMarkKey("fc", o1, r1, "sms", "h")]) {
        assert.equal(key.match(/\{[^}]*\}/)?.[0], tag, key);
        assert.equal(key.indexOf("{"), key.lastIndexOf("{"), `one hash tag only: ${key}`);
      }
    }), { numRuns: 5000 });
  });

  for (const store of ["memory", "redis"] as const) {
    it(`claims hostile sends on the ${store} store without a crash, a stray rejection, or a foreign counter`, async () => {
      const keyPrefix = uniquePrefix(`hostile-${store}`);
      const service = createCapService({
        store, redisUrl: REDIS_URL, keyPrefix, timeoutMs: 2000, failMode: "closed",
        rules: [
          { id: "__proto__", scope: "global", max_count: 2, window_seconds: 600 },
          { id: "per-ctor", scope: "global", max_count: 1, window_seconds: 600, per: ["constructor"] },
          { id: "{x}|y:z", scope: "channel", channel: "sms", max_count: 3, window_seconds: 600 },
        ],
      }, {}, { warn: () => undefined, error: () => undefined });
      const strays: unknown[] = [];
      const onRejection = (reason: unknown) => strays.push(reason);
      process.on("unhandledRejection", onRejection);
      try {
        await fc.assert(fc.asyncProperty(rawSend, async (raw) => {
          let send;
          try {
            send = parseSend(raw, service.sendRules);
          } catch (err) {
            if (err instanceof SendFieldError) return;
            throw err;
          }
          const decision = await service.engine.claim(send);
          assert.ok(["allowed", "capped", "exempt"].includes(decision.kind), JSON.stringify(decision));
          if (decision.kind === "allowed") {
            for (const cap of decision.caps) assert.ok(cap.key.startsWith(`${keyPrefix}:${recipientHashTag(send.org, recipientToken(send.recipient))}:`), cap.key);
          }
        }), { numRuns: store === "redis" ? 400 : 1500 });
        assert.deepEqual(strays, []);
      } finally {
        process.off("unhandledRejection", onRejection);
        await service.close();
        if (store === "redis") {
          const redis = redisClient();
          await dropPrefix(redis, keyPrefix);
          await redis.quit();
        }
      }
    });
  }
});
