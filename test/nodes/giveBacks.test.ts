import assert from "node:assert/strict";
import Redis from "ioredis";
import { helper, type Msg, reasonOf, warnings } from "../support/nodeRed";
import { deployChain, push } from "../support/chainFlow";
import { sleep, uniquePrefix } from "../support/redis";
import { SuiteStore, type StoreKind } from "../support/suiteStore";
import { OwnRedis } from "../support/redisServer";
import { SlowLink } from "../support/slowLink";

/** capA's verdict, whatever the later gate (capB, no caps) wrote after it */
function capAReason(msg: Msg | undefined): string | undefined {
  return (msg?.admission as { trail: { gate: string; reason?: string }[] } | undefined)?.trail[0]?.reason;
}

const ONE_A_DAY = [{ id: "daily", scope: "global", max_count: 1, window_seconds: 86400 }];

type Chain = Awaited<ReturnType<typeof deployChain>>;

/** Two copies of one send: into `entry`, each holding a claim of `kind`; a later send of the recipient is refused for `reason` while it is held. */
interface Copies {
  entry: string;
  kind: "cap" | "dup";
  reason: string;
  send: (i: number, messageId: string) => Record<string, unknown>;
}

/**
 * Two copies of each of `count` sends (recipients `first`…) in one tick, each
 * copy holding the claim; then the copy that made it (the first of each pair to
 * arrive) released, or with `both` every copy; then one later send of each
 * recipient. Returns the copies as they left, and how many later sends were
 * refused.
 */
async function copiesThenLater(chain: Chain, copies: Copies, count: number, first: number, both: boolean): Promise<{ sent: Msg[]; refused: number }> {
  const before = chain.out.total();
  for (let i = first; i < first + count; i++) for (let c = 0; c < 2; c++) chain.node(copies.entry).receive(copies.send(i, `m${i}`));
  await chain.out.until(before + 2 * count, 20_000);
  const sent = chain.out.sequence.slice(before).map((s) => s.msg);
  const holders = sent.filter((m) => (m.admission as { claims: { kind: string }[] }).claims.some((c) => c.kind === copies.kind));
  assert.equal(holders.length, 2 * count, "the first copy made the claim, the second holds it too: each can give it back");
  const seen = new Set<string>();
  const released = both ? sent : sent.filter((m) => !seen.has(String(m.messageId)) && seen.add(String(m.messageId)));
  for (const m of released) chain.node("release").receive(structuredClone(m));
  await chain.out.until(before + 2 * count + released.length, 20_000);
  for (let i = first; i < first + count; i++) chain.node(copies.entry).receive(copies.send(i, `later${i}`));
  await chain.out.until(before + 3 * count + released.length, 20_000);
  const later = chain.out.sequence.slice(before + 2 * count + released.length).map((s) => s.msg).filter((m) => String(m.messageId).startsWith("later"));
  return { sent, refused: later.filter((m) => reasonOf(m) === copies.reason).length };
}

/** `count` sends to new recipients in one tick, as they left. */
async function freshSends(chain: Chain, count: number): Promise<Msg[]> {
  const before = chain.out.total();
  for (let i = 0; i < count; i++) chain.node("capA").receive({ recipient: `fresh${i}`, channel: "sms", messageId: `f${i}` });
  await chain.out.until(before + count, 20_000);
  return chain.out.sequence.slice(before).map((o) => o.msg);
}

/** Whether the msg took a slot of a total cap. */
function tookTotal(m: Msg): boolean {
  return (m.admission as { claims: { kind: string }[] }).claims.some((c) => c.kind === "total");
}

/**
 * A send to each of `count` recipients (`first`…) in one tick, the same sends
 * again 1.1 s later, then the first ones given back; returns both waves as
 * they left.
 */
async function sendAgainLater(chain: Chain, count: number, first: number): Promise<{ firsts: Msg[]; seconds: Msg[] }> {
  const wave = async (): Promise<Msg[]> => {
    const before = chain.out.total();
    for (let i = first; i < first + count; i++) chain.node("capA").receive({ recipient: `s${i}`, channel: "sms", messageId: `m${i}` });
    await chain.out.until(before + count, 20_000);
    return chain.out.sequence.slice(before).map((o) => o.msg);
  };
  const firsts = await wave();
  await sleep(1_100);
  const seconds = await wave();
  const before = chain.out.total();
  for (const m of firsts) chain.node("release").receive(structuredClone(m));
  await chain.out.until(before + count, 20_000);
  return { firsts, seconds };
}

describe("give-backs touch only what the msg itself took", function () {
  this.timeout(30_000);
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());

  for (const store of ["memory", "redis"] as const) {
    it(`says in the trail what was given back, not what was asked (${store}): a msg released twice refunds 1, then 0; a burst of 1,000 released twice in one tick, 1,000 in all`, async () => {
      const chain = await deployChain({ store, keyPrefix: uniquePrefix("refunded"), rules: ONE_A_DAY, config: { timeoutMs: 1000 } });
      const refundedOf = (m: Msg | undefined): number | undefined => (m?.admission as { trail: { refunded?: number }[] } | undefined)?.trail.at(-1)?.refunded;
      await push(chain, "capA", { recipient: "r", channel: "sms", messageId: "A" });
      const sent = chain.out.of("sent")[0];
      await push(chain, "release", structuredClone(sent));
      await push(chain, "release", structuredClone(sent));
      assert.deepEqual(chain.out.of("released").map(refundedOf), [1, 0], "the second release found nothing left to give back");
      for (let i = 0; i < 1_000; i++) chain.node("capA").receive({ recipient: `b${i}`, channel: "sms", messageId: `b${i}` });
      await chain.out.until(1 + 2 + 1_000, 20_000);
      const burst = chain.out.of("sent").slice(1);
      assert.equal(burst.length, 1_000);
      for (const m of [...burst, ...burst]) chain.node("release").receive(structuredClone(m));
      await chain.out.until(1 + 2 + 1_000 + 2_000, 20_000);
      const refunds = chain.out.of("released").slice(2).map((m) => refundedOf(m) ?? 0);
      assert.equal(refunds.reduce((a, b) => a + b, 0), 1_000, "each slot given back once, and said once");
    });
  }

  for (const store of ["memory", "redis"] as const) {
    it(`counts a claim given back once in the trail, its shadow caps' entries with it (${store}): beside a total cap, refunded 2 (the claim and the total's slot); 1 msg, then 500 in one tick`, async () => {
      const rules = [...ONE_A_DAY, { id: "shadow-hourly", scope: "global", max_count: 3, window_seconds: 3_600, enforcement: "shadow" },
        { id: "campaign-total", scope: "global", counts: "total", max_count: 10_000, window_seconds: 1, window_type: "lifetime" }];
      const chain = await deployChain({ store, keyPrefix: uniquePrefix("refunded-shadow"), rules, config: { timeoutMs: 1000 } });
      const refundedOf = (m: Msg): number | undefined => (m.admission as { trail: { refunded?: number }[] }).trail.at(-1)?.refunded;
      for (const [count, first] of [[1, 0], [500, 1]] as const) {
        const before = chain.out.total();
        for (let i = first; i < first + count; i++) chain.node("capA").receive({ recipient: `rs${i}`, channel: "sms", messageId: `m${i}` });
        await chain.out.until(before + count, 20_000);
        const sent = chain.out.sequence.slice(before).map((o) => o.msg);
        assert.ok(sent.every((m) => (m.admission as { claims: { shadow_fields?: string[] }[] }).claims.some((c) => c.shadow_fields?.length === 1)));
        for (const m of sent) chain.node("release").receive(structuredClone(m));
        await chain.out.until(before + 2 * count, 20_000);
        const released = chain.out.sequence.slice(before + count).map((o) => o.msg);
        assert.deepEqual([...new Set(released.map(refundedOf))], [2], "one cap claim and one total slot each");
      }
    });
  }

  for (const store of ["memory", "redis"] as const) {
    for (const both of [false, true]) {
      it(`two copies of one send in flight (${store}), ${both ? "both released (the provider failed both): the slot comes back" : "the one that took the slot released, the other sent: the slot stays"}; 1 recipient, then 1,000 in one tick`, async () => {
        const chain = await deployChain({ store, keyPrefix: uniquePrefix("copies"), rules: ONE_A_DAY, config: { timeoutMs: 1000 } });
        const copies: Copies = { entry: "capA", kind: "cap", reason: "frequency_capped", send: (i, messageId) => ({ recipient: `c${i}`, channel: "sms", messageId }) };
        for (const [count, first] of [[1, 0], [1_000, 1]] as const) {
          const { sent, refused } = await copiesThenLater(chain, copies, count, first, both);
          assert.equal(sent.filter((m) => chain.out.of("sent").includes(m)).length, 2 * count, "both copies pass: the second is a retry of the first");
          if (both) assert.equal(refused, 0, `${refused} of ${count} recipients refused for a slot no send went out on`);
          else assert.equal(refused, count, `${count - refused} of ${count} recipients got a second send past a cap of 1 a day`);
        }
      });

      it(`two copies of one body in flight (${store}), ${both ? "both released: the body is free again" : "the one that made the mark released, the other sent: the mark stays"}; 1 recipient, then 500 in one tick`, async () => {
        const chain = await deployChain({ store, keyPrefix: uniquePrefix("dupcopies"), rules: [], config: { timeoutMs: 1000 } });
        const copies: Copies = { entry: "sup", kind: "dup", reason: "duplicate_content", send: (i, messageId) => ({ recipient: `d${i}`, channel: "sms", messageId, payload: `body ${i}` }) };
        for (const [count, first] of [[1, 0], [500, 1]] as const) {
          const { refused } = await copiesThenLater(chain, copies, count, first, both);
          if (both) assert.equal(refused, 0, `${refused} of ${count} bodies refused as duplicates of sends that never went out`);
          else assert.equal(refused, count, `${count - refused} of ${count} bodies sent twice`);
        }
      });
    }
  }

  for (const store of ["memory", "redis"] as const) {
    it(`two copies of one send beside a total cap (${store}): the copy that took the total's slot released, the other sent, the total still counts the send; 1 recipient, then 1,000 in one tick`, async () => {
      // room for every copy at once: a copy reserves a slot until it finds itself a retry of the send, which takes none
      const total = { id: "campaign-total", scope: "global", counts: "total", max_count: 2_002, window_seconds: 1, window_type: "lifetime" };
      const chain = await deployChain({ store, keyPrefix: uniquePrefix("copies-total"), rules: [...ONE_A_DAY, total], config: { timeoutMs: 1000 } });
      const copies: Copies = { entry: "capA", kind: "cap", reason: "frequency_capped", send: (i, messageId) => ({ recipient: `t${i}`, channel: "sms", messageId }) };
      for (const [count, first] of [[1, 0], [1_000, 1]] as const) {
        const { sent } = await copiesThenLater(chain, copies, count, first, false);
        assert.equal(sent.filter(tookTotal).length, count, "the first copy took the total's slot, its retry none");
      }
      // 1,001 sends went out: 1,001 slots of the total are left
      const fresh = await freshSends(chain, 1_101);
      const refused = fresh.filter((m) => (m.admission as { cap_id?: string }).cap_id === "campaign-total");
      assert.equal(fresh.length - refused.length, 1_001, `${fresh.length - refused.length} of 1,101 new recipients admitted where the total had 1,001 slots left`);
      assert.equal(refused.length, 100);
    });

    it(`a second send of one messageId that took a slot of its own (${store}): the first given back, its total slot comes back; 1 recipient, then 500 in one tick`, async () => {
      // a 1 s cap the first send's entry has left when the second comes: the second holds the daily slot beside the first, takes a
      // 1 s slot and a total slot of its own (it is no retry), so the first's give-back frees its 1 s entry and its total slot
      const rules = [
        { id: "daily5", scope: "global", max_count: 5, window_seconds: 86_400 },
        { id: "per-second", scope: "global", max_count: 1, window_seconds: 1 },
        { id: "campaign-total", scope: "global", counts: "total", max_count: 1_102, window_seconds: 1, window_type: "lifetime" },
      ];
      const chain = await deployChain({ store, keyPrefix: uniquePrefix("second-total"), rules, config: { timeoutMs: 1000 } });
      for (const [count, first] of [[1, 0], [500, 1]] as const) {
        const { firsts, seconds } = await sendAgainLater(chain, count, first);
        assert.equal([...firsts, ...seconds].filter(tookTotal).length, 2 * count, "each send took a total slot");
      }
      // 501 sends went out (the second of each): 601 slots of the total are left
      const fresh = await freshSends(chain, 700);
      const refused = fresh.filter((m) => (m.admission as { cap_id?: string }).cap_id === "campaign-total");
      assert.equal(fresh.length - refused.length, 601, `${fresh.length - refused.length} of 700 new recipients admitted where the total had 601 slots left`);
    });
  }

  for (const store of ["memory", "redis"] as const) {
    it(`a retry beside a total cap and a shadow cap whose slot aged out (${store}): the first copy given back, the total still counts the retry's send; 1 recipient, then 500 in one tick`, async () => {
      // the retry holds the daily slot beside the first copy and takes a shadow entry of its own: a retry all the same (shadow caps
      // never refuse, so they do not tell one), with no total slot of its own
      const rules = [
        { id: "daily5", scope: "global", max_count: 5, window_seconds: 86_400 },
        { id: "shadow-second", scope: "global", max_count: 1, window_seconds: 1, enforcement: "shadow" },
        { id: "campaign-total", scope: "global", counts: "total", max_count: 1_102, window_seconds: 1, window_type: "lifetime" },
      ];
      const chain = await deployChain({ store, keyPrefix: uniquePrefix("shadow-total"), rules, config: { timeoutMs: 1000 } });
      for (const [count, first] of [[1, 0], [500, 1]] as const) {
        const { firsts, seconds } = await sendAgainLater(chain, count, first);
        assert.deepEqual([firsts.filter(tookTotal).length, seconds.filter(tookTotal).length], [count, 0], "the retries took no total slot");
      }
      // 501 sends went out (the retries): 601 slots of the total are left
      const fresh = await freshSends(chain, 700);
      const admitted = fresh.filter((m) => (m.admission as { cap_id?: string }).cap_id !== "campaign-total").length;
      assert.equal(admitted, 601, `${admitted} of 700 new recipients admitted where the total had 601 slots left`);
    });
  }

  it("a timed-out retry, released, does not free the slot its first attempt holds", async () => {
    const own = new OwnRedis(0, ["--enable-debug-command", "yes"]);
    await own.start();
    const admin = new Redis(own.url);
    try {
      const chain = await deployChain({ store: "redis", keyPrefix: uniquePrefix("retry"), rules: ONE_A_DAY, config: { redisUrl: own.url, timeoutMs: 50 } });
      await push(chain, "capA", { recipient: "r", channel: "sms", messageId: "A" });
      assert.equal(capAReason(chain.out.of("sent")[0]), undefined, "attempt 1 delivered");

      await admin.ping();
      const stalled = admin.debug("SLEEP", "0.3");
      await sleep(20);
      await push(chain, "capA", { recipient: "r", channel: "sms", messageId: "A" });
      const retry = chain.out.of("sent")[1];
      assert.equal(capAReason(retry), "fail_open", "the retry timed out");
      assert.equal((retry.admission as { claims: unknown[] }).claims.length, 1, "its possible claim is recorded, to be given back");
      await stalled;
      await sleep(1100); // the breaker's cool-down after the stall

      // the provider failed for the retry: give back what the retry took (nothing: attempt 1 holds the slot)
      await push(chain, "release", { ...retry });
      await push(chain, "capA", { recipient: "r", channel: "sms", messageId: "B" });
      const [skipped] = chain.out.of("skipped");
      assert.equal(skipped?.messageId, "B", "attempt 1 still holds the only slot of the day");
      assert.equal(reasonOf(skipped), "frequency_capped");
    } finally {
      admin.disconnect();
      await own.stop();
      own.cleanUp();
    }
  });

  it("a timed-out duplicate check (Redis made its mark) is on the msg: given back, the body is free; a timed-out retry's give-back leaves the first attempt's mark", async () => {
    const own = new OwnRedis(0, ["--enable-debug-command", "yes"]);
    await own.start();
    const admin = new Redis(own.url);
    // Redis blocks 0.3 s from now; `over` settles when it answers again (wrapped: an async function would wait for it)
    const stall = async (): Promise<{ over: Promise<unknown> }> => {
      await admin.ping();
      const over = admin.debug("SLEEP", "0.3");
      await sleep(20);
      return { over };
    };
    const supReason = (m: Msg | undefined) => (m?.admission as { trail: { reason?: string }[] } | undefined)?.trail[0]?.reason;
    const dupClaims = (m: Msg | undefined) => ((m?.admission as { claims: { kind: string }[] } | undefined)?.claims ?? []).filter((c) => c.kind === "dup").length;
    try {
      const chain = await deployChain({ store: "redis", keyPrefix: uniquePrefix("dupmark"), rules: [], config: { redisUrl: own.url, timeoutMs: 50 } });
      await push(chain, "sup", { recipient: "warm-up", channel: "sms", messageId: "W", payload: "hello" });
      // 1. the check times out, but Redis makes the mark: the msg carries it, and its give-back frees the body
      let stalled = await stall();
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "A", payload: "hello" });
      const a = chain.out.of("sent")[1];
      assert.equal(supReason(a), "fail_open", "the check timed out");
      assert.equal(dupClaims(a), 1, "its possible mark is on the msg");
      await stalled.over;
      await sleep(1100); // the breaker's cool-down after the stall
      await push(chain, "release", { ...a });
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "B", payload: "hello" });
      assert.equal(chain.out.of("sent")[2]?.messageId, "B", "A's mark was given back: B is no duplicate");
      // 2. B's mark stands; B retried while Redis stalls: the retry's give-back does not free B's mark
      stalled = await stall();
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "B", payload: "hello" });
      const retry = chain.out.of("sent")[3];
      assert.equal(supReason(retry), "fail_open");
      await stalled.over;
      await sleep(1100);
      await push(chain, "release", { ...retry });
      await push(chain, "sup", { recipient: "r", channel: "sms", messageId: "C", payload: "hello" });
      const [dup] = chain.out.of("skipped");
      assert.equal(dup?.messageId, "C");
      assert.equal(reasonOf(dup), "duplicate_content", "B's mark still stands");
    } finally {
      admin.disconnect();
      await own.stop();
      own.cleanUp();
    }
  });

  it("a claim whose answer was lost with its connection (Redis ran it) is on the msg: released, it gives its slot back", async () => {
    const link = await SlowLink.open();
    const keyPrefix = uniquePrefix("dropped");
    try {
      const chain = await deployChain({ store: "redis", keyPrefix, rules: ONE_A_DAY, config: { redisUrl: link.url, timeoutMs: 1000 } });
      link.cutAnswerFrom("dropped-answer");
      await push(chain, "capA", { recipient: "dropped-answer", channel: "sms", messageId: "A" });
      const first = chain.out.of("sent")[0];
      assert.equal(capAReason(first), "fail_open", "the claim's answer never came");
      assert.equal((first.admission as { claims: unknown[] }).claims.length, 1, "its possible claim is recorded, to be given back");
      await sleep(500); // reconnected
      await push(chain, "release", { ...first });
      await push(chain, "capA", { recipient: "dropped-answer", channel: "sms", messageId: "B" });
      const second = chain.out.of("sent")[1] as Msg | undefined;
      assert.equal(second?.messageId, "B", "the slot A's lost claim took was given back");
      assert.equal(capAReason(second), undefined);
    } finally {
      await helper.unload();
      await link.close();
    }
  });

});

for (const kind of ["redis", "redis-cluster"] as StoreKind[]) {
describe(`give-backs refuse forged claims (${kind} store)`, function () {
  this.timeout(30_000);
  const store = new SuiteStore(kind, { spread: false });
  store.hooks();
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());

  it("ignores claims rewritten to point at another recipient's counters, with a warning", async () => {
    const keyPrefix = uniquePrefix("forged");
    try {
      const chain = await deployChain({ store, keyPrefix, rules: ONE_A_DAY });
      await push(chain, "capA", { recipient: "victim", channel: "sms", messageId: "V1" });
      await push(chain, "capA", { recipient: "mallory", channel: "sms", messageId: "M1" });
      const [victimMsg, mallorys] = chain.out.of("sent") as [Msg, Msg];
      const victimClaim = (victimMsg.admission as { claims: Record<string, unknown>[] }).claims[0];
      // a function node copies the victim's claim onto mallory's msg, and one aimed at the defer queue
      const forged = { ...(mallorys.admission as object), claims: [victimClaim, { ...victimClaim, kind: "dup", key: `${keyPrefix}:{${keyPrefix}:dq}:msg` }] };
      await push(chain, "release", { ...mallorys, admission: forged });
      assert.ok(warnings().some((w) => w.includes("not this msg's own")), warnings().join("\n"));
      await push(chain, "capA", { recipient: "victim", channel: "sms", messageId: "V2" });
      assert.equal(chain.out.of("skipped")[0]?.messageId, "V2", "the victim's slot was not given back");
    } finally {
      await store.drop(keyPrefix);
    }
  });
});
}
