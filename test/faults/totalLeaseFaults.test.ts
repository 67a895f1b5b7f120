import assert from "node:assert/strict";
import { CapEngine, type CapDecision } from "../../src/core/caps/capEngine";
import { StoreUnavailableError } from "../../src/core/errors";
import { capAdmission } from "../../src/core/admission";
import { totalCounterKey } from "../../src/core/caps/keys";
import { emptyRecord } from "../../src/core/ownKeys";
import { totalCounters } from "../../src/core/caps/totals/totalCounters";
import { withDefaults, type CapRule, type CapRuleInput } from "../../src/core/rules/rules";
import type { Send } from "../../src/core/send";
import { StoreAccess, type FailMode } from "../../src/core/store/storeAccess";
import type { AdmissionStore, ClaimOutcome, ClaimRequest, Settled } from "../../src/core/store/admissionStore";
import { MemoryStore } from "../../src/core/store/memoryStore";
import { RedisStore } from "../../src/redis/redisStore";
import { dropPrefix, REDIS_URL, redisClient, sleep, uniquePrefix } from "../support/redis";

const total = (max: number): CapRuleInput => ({ id: "ad-total", scope: "global", counts: "total", max_count: max, window_seconds: 1, window_type: "lifetime" });
const ONE_EACH: CapRuleInput = { id: "one-each", scope: "global", max_count: 1, window_seconds: 600 };

function engineOn(store: AdmissionStore, inputs: CapRuleInput[], options: { failMode?: FailMode; timeoutMs?: number; leaseMs?: number; keyPrefix?: string } = {}): CapEngine {
  const rules: CapRule[] = inputs.map(withDefaults);
  const access = new StoreAccess(store, { failMode: options.failMode ?? "open", timeoutMs: options.timeoutMs ?? 1000, maxQueued: 100_000, warn: () => undefined });
  return new CapEngine({ access, rules: () => rules, keyPrefix: options.keyPrefix ?? uniquePrefix("lf"), exemptTiers: [], leaseMs: options.leaseMs ?? 10_000 });
}

function send(recipient: string, messageId = recipient): Send {
  return { recipient, channel: "push", messageId, org: "acme", attributes: emptyRecord(), recipientLimits: emptyRecord() };
}

/** A send's verdict, or "hung" when it has none after `ms`. */
async function within(decision: Promise<CapDecision>, ms: number): Promise<CapDecision["kind"] | "hung"> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<"hung">((resolve) => { timer = setTimeout(() => resolve("hung"), ms); });
  const kind = await Promise.race([decision.then((d) => d.kind), hung]);
  clearTimeout(timer);
  return kind;
}

/** A real memory store whose quota calls take `delayMs`, or whose recipient claims fail while `failClaims` is set. */
function slowMemoryStore(delayMs: number): { store: AdmissionStore; failClaims: { on: boolean } } {
  const inner = new MemoryStore();
  const failClaims = { on: false };
  const store = Object.create(inner) as AdmissionStore & { quota: MemoryStore["quota"]; claim: MemoryStore["claim"] };
  store.quota = async (items) => {
    await sleep(delayMs);
    return inner.quota(items);
  };
  store.claim = async (items: readonly ClaimRequest[]): Promise<Settled<ClaimOutcome>[]> => (failClaims.on
    ? items.map(() => new StoreUnavailableError("timeout", "injected: the recipient's counter timed out"))
    : inner.claim(items));
  return { store, failClaims };
}

describe("total caps under store faults", function () {
  this.timeout(60_000);
  const redis = redisClient();
  after(() => redis.quit());

  it("a quota call that times out but lands strands nothing: later sends get verdicts and the total holds (real Redis, CLIENT PAUSE)", async () => {
    const keyPrefix = uniquePrefix("lf-pause");
    const store = new RedisStore({ url: REDIS_URL });
    const engine = engineOn(store, [total(4)], { timeoutMs: 50, leaseMs: 2000, keyPrefix });
    try {
      assert.equal((await engine.claim(send("warm"))).kind, "allowed");
      await redis.call("CLIENT", "PAUSE", "300", "WRITE");
      const paused = await engine.claim(send("paused"));
      assert.equal(paused.kind, "fail_open", "the call timed out (and lands once Redis resumes)");
      await sleep(500);
      const kinds: string[] = [];
      for (let i = 0; i < 4; i++) kinds.push(await within(engine.claim(send(`u${i}`)), 4000));
      assert.ok(!kinds.includes("hung"), `no send may hang: ${kinds.join(", ")}`);
      const counted = Object.entries(await redis.hgetall((await redis.keys(`${keyPrefix}:t:*`)).find((k) => !k.endsWith(":r")) as string))
        .filter(([f]) => f.startsWith("b")).reduce((sum, [, v]) => sum + Number(v), 0);
      assert.ok(counted <= 4, `counted ${counted}`);
      assert.equal(kinds.filter((k) => k === "allowed").length + 1 + (paused.kind === "fail_open" ? 0 : 1), counted, "every allowed send is counted");
    } finally {
      await engine.totals.close();
      await store.close();
      await dropPrefix(redis, keyPrefix);
    }
  });

  it("fail mode closed: a send whose recipient counter fails goes to Catch and gives its total slot back", async () => {
    const { store, failClaims } = slowMemoryStore(0);
    const engine = engineOn(store, [total(2), ONE_EACH], { failMode: "closed", leaseMs: 1000 });
    failClaims.on = true;
    await assert.rejects(engine.claim(send("a")), /injected/);
    failClaims.on = false;
    assert.deepEqual([await within(engine.claim(send("b")), 2000), await within(engine.claim(send("c")), 2000)], ["allowed", "allowed"], "the failed send took nothing");
    assert.equal(await within(engine.claim(send("d")), 2000), "capped");
    await engine.totals.close();
  });

  it("one total cap alone, its slot from the lease: a spend call that fails goes to Catch (closed) or leaves fail_open holding no slot (open), and is never counted", async () => {
    for (const failMode of ["closed", "open"] as const) {
      const inner = new MemoryStore();
      const failQuota = { on: false };
      const store = Object.create(inner) as AdmissionStore & { quota: MemoryStore["quota"] };
      store.quota = async (items) => (failQuota.on ? items.map(() => new StoreUnavailableError("error", "injected: the quota call failed")) : inner.quota(items));
      const rule = withDefaults(total(1000));
      const keyPrefix = uniquePrefix("lf-alone");
      const engine = engineOn(store, [total(1000)], { failMode, leaseMs: 1000, keyPrefix });
      // one after another, each block a little larger (about a second of sends): after 5 the lease holds slots to spare
      for (let i = 0; i < 5; i++) assert.equal((await engine.claim(send(`warm${i}`))).kind, "allowed");
      failQuota.on = true;
      if (failMode === "closed") {
        await assert.rejects(engine.claim(send("x")), /injected/);
      } else {
        const failed = await engine.claim(send("x"));
        assert.equal(failed.kind, "fail_open");
        assert.deepEqual(failed.kind === "fail_open" ? failed.totals : undefined, [], "no slot was counted, so none is on the msg to give back");
      }
      failQuota.on = false;
      for (let i = 0; i < 3; i++) assert.equal((await engine.claim(send(`u${i}`))).kind, "allowed", failMode);
      const reading = await engine.totals.read({ key: totalCounterKey(keyPrefix, "acme", rule.id, []), limit: totalCounters.fixedLimit(rule) }, 0);
      assert.equal(reading.used, 8, `${failMode}: the 5 warm sends and 3 more; the failed one was never counted`);
      await engine.totals.close();
    }
  });

  it("one total cap alone, a burst before any lease: 300 sends at once against 100 admit exactly 100 (memory, Redis); a lease call that fails sends each waiting send to Catch (closed) or fail_open holding no slot (open)", async () => {
    const burst = async (engine: CapEngine, tag: string, n: number): Promise<PromiseSettledResult<CapDecision>[]> =>
      Promise.allSettled(Array.from({ length: n }, (_, i) => engine.claim(send(`${tag}${i}`))));
    for (const store of [new MemoryStore(), new RedisStore({ url: REDIS_URL })]) {
      const keyPrefix = uniquePrefix("lf-burst");
      const exact = engineOn(store, [total(100)], { keyPrefix });
      const kinds = (await burst(exact, "b", 300)).map((r) => (r.status === "fulfilled" ? r.value.kind : "rejected"));
      assert.deepEqual([kinds.filter((k) => k === "allowed").length, kinds.filter((k) => k === "capped").length], [100, 200], store.kind);
      await exact.totals.close();
      await store.close();
      await dropPrefix(redis, keyPrefix);
    }
    for (const failMode of ["closed", "open"] as const) {
      const inner = new MemoryStore();
      const store = Object.create(inner) as AdmissionStore & { quota: MemoryStore["quota"] };
      store.quota = async (items) => items.map(() => new StoreUnavailableError("error", "injected: the quota call failed"));
      const engine = engineOn(store, [total(1000)], { failMode });
      const settled = await burst(engine, failMode, 50);
      if (failMode === "closed") {
        assert.ok(settled.every((r) => r.status === "rejected" && /injected/.test(String(r.reason))), "each waiting send goes to Catch");
      } else {
        assert.ok(settled.every((r) => r.status === "fulfilled" && r.value.kind === "fail_open" && !("totals" in r.value && r.value.totals?.length)), "each leaves fail_open with no slot to give back");
      }
      await engine.totals.close();
    }
  });

  it("a send reserving while a spend-only call is in flight waits for a grant: a total far from full never refuses it", async () => {
    const { store } = slowMemoryStore(20);
    const engine = engineOn(store, [total(1_000_000)]);
    const first = engine.claim(send("a"));
    await sleep(30);
    const second = await engine.claim(send("b"));
    assert.deepEqual([(await first).kind, second.kind], ["allowed", "allowed"]);
    await engine.totals.close();
  });

  it("a claim given back twice (a cloned msg, a copied claim) gives its slot back once (real Redis)", async () => {
    const keyPrefix = uniquePrefix("lf-twice");
    const store = new RedisStore({ url: REDIS_URL });
    const engine = engineOn(store, [total(3)], { keyPrefix });
    try {
      const admitted = [];
      for (const r of ["a", "b", "c"]) admitted.push(await engine.claim(send(r)));
      assert.ok(admitted.every((d) => d.kind === "allowed"));
      const first = admitted[0] as CapDecision;
      const claims = capAdmission(first, undefined, { gate: "g", configId: "cfg", storeKind: "redis", channel: "push", now: new Date() }).claims;
      const total0 = claims.find((c) => c.kind === "total");
      assert.ok(total0 && total0.kind === "total");
      const spend = { key: total0.key, lease: total0.lease, bucket: total0.bucket, id: total0.spend, atMs: total0.spent_ms };
      assert.deepEqual([await engine.totals.refund(spend), await engine.totals.refund(spend)], [true, false]);
      const after = [await engine.claim(send("d")), await engine.claim(send("e"))].map((d) => d.kind);
      assert.deepEqual(after, ["allowed", "capped"], "one slot came back, not two");
    } finally {
      await engine.totals.close();
      await store.close();
      await dropPrefix(redis, keyPrefix);
    }
  });

  it("a give-back whose call fails is not reported as given (the claim stays on the msg)", async () => {
    const inner = new MemoryStore();
    let failQuota = false;
    const store = Object.create(inner) as AdmissionStore & { quota: MemoryStore["quota"] };
    store.quota = async (items) => (failQuota ? items.map(() => new StoreUnavailableError("error", "injected")) : inner.quota(items));
    const engine = engineOn(store, [total(1)]);
    const admitted = await engine.claim(send("a"));
    assert.equal(admitted.kind, "allowed");
    const taken = admitted.kind === "allowed" ? admitted.totals?.[0]?.spend : undefined;
    assert.ok(taken);
    failQuota = true;
    await assert.rejects(engine.totals.refund(taken), /injected/);
    failQuota = false;
    assert.equal(await engine.totals.refund(taken), true, "given back once the store answers");
    await engine.totals.close();
  });
});
