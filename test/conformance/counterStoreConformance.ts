import { markValue } from "../../src/core/suppression/markValue";
import assert from "node:assert/strict";
import { StoreUnavailableError } from "../../src/core/errors";
import type { AdmissionStore, ClaimOutcome, CounterSpec, ReleaseAnswer, Settled, ThroughputOutcome } from "../../src/core/store/admissionStore";
import { gcraLimit } from "../../src/core/throughput/gcra";
import { ceilingKey } from "../../src/core/throughput/throughputKeys";
import { sleep, uniquePrefix } from "../support/redis";

function answered<T>(result: Settled<T> | undefined): T {
  if (result === undefined || result instanceof StoreUnavailableError) throw result ?? new Error("no answer");
  return result;
}

/**
 * One suite, every store: the memory store and the Redis store (single and
 * cluster) must give the same answers for the same inputs (SPEC §5).
 */
export function counterStoreConformance(label: string, open: () => Promise<AdmissionStore>, close: (s: AdmissionStore, prefix: string) => Promise<void>): void {
  describe(`counter store conformance: ${label}`, function () {
    this.timeout(20_000);
    let store: AdmissionStore;
    let prefix: string;
    const key = (recipient = "r") => `${prefix}:{o|${recipient}}:c`;
    const spec = (field: string, max: number, windowMs = 60_000): CounterSpec => ({ field, max, windowMs });
    const claim = async (member: string, counters: CounterSpec[], options: { recipient?: string; token?: number } = {}): Promise<ClaimOutcome> =>
      answered((await store.claim([{ key: key(options.recipient), member, token: options.token ?? 1, counters }]))[0]);
    const record = async (member: string, counters: CounterSpec[]): Promise<number[]> =>
      answered((await store.record([{ key: key(), member, counters }]))[0]);
    const release = async (member: string, token: number, fields: string[]): Promise<ReleaseAnswer> =>
      answered((await store.release([{ kind: "cap", key: key(), member, token, fields }]))[0]);
    /** a give-back that freed `given` entries (or marks) and handed `handed` to another attempt of its msg */
    const gave = (given: number, handed = 0): ReleaseAnswer => ({ given, handed });

    beforeEach(async () => {
      store = await open();
      prefix = uniquePrefix("conf");
    });
    afterEach(async () => close(store, prefix));

    it("keeps each recipient's last `keep` history entries, in order, many recipients (and one several times) in one call", async () => {
      const history = (recipient: string) => `${prefix}:{o|${recipient}}:h`;
      const append = (entries: [string, string][], keep: number) => store.appendHistory(entries.map(([r, entry]) => ({ key: history(r), entry })), keep, 60_000);
      assert.deepEqual((await append([["a", "a1"], ["b", "b1"], ["a", "a2"]], 3)).map(answered), [1, 1, 1]);
      await append([["a", "a3"], ["a", "a4"]], 3);
      assert.deepEqual(await store.readHistory(history("a"), 3), ["a2", "a3", "a4"]);
      assert.deepEqual(await store.readHistory(history("b"), 3), ["b1"]);
      assert.deepEqual(await store.readHistory(history("c"), 3), []);
      // many more than are kept, in one call and over several: the newest of them
      await append(Array.from({ length: 9 }, (_, i): [string, string] => ["b", `b${i + 2}`]), 2);
      for (let i = 11; i <= 15; i++) await append([["b", `b${i}`]], 2);
      assert.deepEqual(await store.readHistory(history("b"), 2), ["b14", "b15"]);
    });

    it("writes an allowed claim's history entry with the claim, in the recipient's counter hash; a refused one writes none", async () => {
      const cap = spec("a", 2);
      const claimWith = async (member: string) =>
        answered((await store.claim([{ key: key(), member, token: 1, counters: [cap], history: { keep: 3, lifetimeMs: 60_000, after: `|1|gate-${member}|0||a|` } }]))[0]);
      const first = await claimWith("m1");
      assert.equal(first.allowed, true);
      assert.deepEqual(await store.readHistory(key(), 3), [`${first.nowMs.toString(16)}|1|gate-m1|0||a|`]);
      const second = await claimWith("m2");
      assert.equal((await claimWith("m3")).allowed, false);
      assert.deepEqual(await store.readHistory(key(), 3), [`${first.nowMs.toString(16)}|1|gate-m1|0||a|`, `${second.nowMs.toString(16)}|1|gate-m2|0||a|`], "the refusal wrote nothing");
      // the counters are untouched by the history beside them, and a history write keeps them
      await store.appendHistory([{ key: key(), entry: "later" }], 3, 60_000);
      assert.equal((await claimWith("m4")).counters[0]?.count, 2);
      assert.deepEqual((await store.inspect([{ key: key(), counters: [cap] }])).map(answered)[0]?.map((c) => c.count), [2]);
      assert.deepEqual((await store.readHistory(key(), 3)).slice(-1), ["later"]);
    });

    it("writes each claim of one call the history it names: two gates' histories, and claims with none, side by side", async () => {
      const cap = spec("a", 5);
      const gateA = { keep: 2, lifetimeMs: 60_000, after: "|1|ga|0||a|" };
      const gateB = { keep: 2, lifetimeMs: 60_000, after: "|1|gb|0||a|" };
      const order = [gateA, gateB, undefined, gateA, gateB, gateB];
      const outcomes = (await store.claim(order.map((history, i) => ({ key: key(`h${i}`), member: `m${i}`, token: 1, counters: [cap], ...(history ? { history } : {}) })))).map(answered);
      for (const [i, history] of order.entries()) {
        const written = history === undefined ? [] : [`${outcomes[i].nowMs.toString(16)}${history.after}`];
        assert.deepEqual(await store.readHistory(key(`h${i}`), 2), written, `claim ${i}`);
      }
    });

    it("lets a history expire its lifetime after its last write", async () => {
      const history = `${prefix}:{o|r}:h`;
      await store.appendHistory([{ key: history, entry: "e1" }], 5, 400);
      await sleep(200);
      await store.appendHistory([{ key: history, entry: "e2" }], 5, 400);
      await sleep(300);
      assert.deepEqual(await store.readHistory(history, 5), ["e1", "e2"], "the second write renewed it");
      await sleep(400);
      assert.deepEqual(await store.readHistory(history, 5), []);
    });

    it("admits up to max, then refuses with the wait until a slot frees", async () => {
      const cap = spec("a", 3, 30_000);
      for (let i = 1; i <= 3; i++) {
        const r = await claim(`m${i}`, [cap]);
        assert.equal(r.allowed, true);
        assert.equal(r.counters[0]?.count, i);
      }
      const refused = await claim("m4", [cap]);
      assert.equal(refused.allowed, false);
      assert.equal(refused.counters[0]?.blocking, true);
      const retry = refused.counters[0]?.retryAfterMs ?? -1;
      assert.ok(retry > 29_000 && retry <= 30_000, `retry ${retry}`);
    });

    it("claims nothing in any cap when one cap refuses (no partial claim)", async () => {
      const strict = spec("strict", 1);
      const loose = spec("loose", 5);
      assert.equal((await claim("m1", [strict, loose])).allowed, true);
      const refused = await claim("m2", [strict, loose]);
      assert.equal(refused.allowed, false);
      assert.deepEqual(refused.counters.map((c) => c.blocking), [true, false]);
      assert.equal(refused.counters[1]?.count, 1);
      const looseOnly = await claim("m3", [loose]);
      assert.equal(looseOnly.counters[0]?.count, 2, "the refused send must not have taken a loose slot");
    });

    it("never refuses for a shadow cap: a send it alone would refuse is admitted without a slot in it", async () => {
      const shadow: CounterSpec = { ...spec("trial", 1, 30_000), shadow: true };
      const enforced = spec("real", 10);
      const outcomes: ClaimOutcome[] = [];
      for (let i = 1; i <= 5; i++) outcomes.push(await claim(`m${i}`, [enforced, shadow]));
      assert.deepEqual(outcomes.map((o) => o.allowed), [true, true, true, true, true]);
      assert.deepEqual(outcomes.map((o) => o.counters[1]?.wouldRefuse), [false, true, true, true, true]);
      assert.deepEqual(outcomes.map((o) => o.counters[1]?.count), [1, 1, 1, 1, 1], "the shadow counter holds what it would hold if enforced");
      assert.deepEqual(outcomes.map((o) => o.counters[0]?.count), [1, 2, 3, 4, 5]);
      assert.ok(outcomes.every((o) => o.counters.every((c) => !c.blocking)));
      const wait = outcomes[4]?.counters[1]?.retryAfterMs ?? -1;
      assert.ok(wait > 29_000 && wait <= 30_000, `would-refuse wait ${wait}`);
      assert.equal(outcomes[4]?.counters[0]?.wouldRefuse, false);
      // a retry of the one send it holds is no refusal
      const retry = await claim("m1", [enforced, shadow], { token: 2 });
      assert.deepEqual([retry.counters[1]?.alreadyHeld, retry.counters[1]?.wouldRefuse], [true, false]);
      // the would-be refusals took nothing: giving back m2's attempt frees only its enforced slot
      assert.deepEqual(await release("m2", 1, ["real", "trial"]), gave(1));
    });

    it("claims no shadow slot when an enforced cap refuses (all or nothing)", async () => {
      const strict = spec("strict", 1);
      const shadow: CounterSpec = { ...spec("watch", 5), shadow: true };
      assert.equal((await claim("m1", [strict, shadow])).allowed, true);
      const refused = await claim("m2", [strict, shadow]);
      assert.equal(refused.allowed, false);
      assert.deepEqual(refused.counters.map((c) => [c.blocking, c.wouldRefuse]), [[true, false], [false, false]]);
      const look = answered((await store.inspect([{ key: key(), counters: [shadow] }]))[0]);
      assert.equal(look[0]?.count, 1, "the refused send took no shadow slot");
      // a shadow cap that would also refuse is reported, never counted as blocking
      const full: CounterSpec = { ...spec("watch-full", 1), shadow: true };
      await claim("w1", [full]);
      const both = await claim("m3", [strict, full]);
      assert.equal(both.allowed, false);
      assert.deepEqual(both.counters.map((c) => [c.blocking, c.wouldRefuse]), [[true, false], [false, true]]);
    });

    it("records into shadow caps like any other, and a shadow max of 0 would refuse for good", async () => {
      const shadow: CounterSpec = { ...spec("rec-shadow", 2), shadow: true };
      assert.deepEqual(await record("e1", [shadow]), [1]);
      const zero = await claim("z", [{ ...spec("never", 0), shadow: true }]);
      assert.equal(zero.allowed, true);
      assert.deepEqual([zero.counters[0]?.wouldRefuse, zero.counters[0]?.retryAfterMs, zero.counters[0]?.count], [true, null, 0]);
    });

    it("judges a batch of 3,000 claims with a shadow cap in order: each recipient's sends past it admitted, none counted in it", async () => {
      const shadow: CounterSpec = { ...spec("burst-shadow", 2), shadow: true };
      const requests = Array.from({ length: 3000 }, (_, i) => ({
        key: key(`s${i % 600}`), member: `b${i}`, token: 1, counters: [spec("burst-real", 4), shadow],
      }));
      const outcomes = (await store.claim(requests)).map(answered);
      // five sends per recipient: 1-4 fit the enforced cap, the 5th is refused; the shadow cap would refuse the 3rd and 4th
      outcomes.forEach((o, i) => {
        const nth = Math.floor(i / 600);
        assert.equal(o.allowed, nth < 4, `send ${i}`);
        assert.equal(o.counters[1]?.wouldRefuse, nth === 2 || nth === 3 || nth === 4, `send ${i} shadow`);
        assert.equal(o.counters[1]?.count, Math.min(nth, 2) + (nth < 2 ? 1 : 0), `send ${i} shadow count`);
      });
    });

    it("keeps each claim's own limit in a batch of 40 different limits (recipient limits), and reads them back alike", async () => {
      // windows 60 s + i s, max 1 for even i and 2 for odd: 40 limits in one call, more than the store scans before it indexes them
      const limitOf = (i: number): CounterSpec => spec("own", 1 + (i % 2), 60_000 + i * 1000);
      const batch = (member: string) => Array.from({ length: 40 }, (_, i) => ({ key: key(`l${i}`), member: `${member}${i}`, token: 1, counters: [limitOf(i)] }));
      assert.ok((await store.claim(batch("a"))).map(answered).every((o) => o.allowed));
      const second = (await store.claim(batch("b"))).map(answered);
      second.forEach((o, i) => {
        assert.equal(o.allowed, i % 2 === 1, `claim ${i}`);
        if (i % 2 === 0) {
          const retry = o.counters[0]?.retryAfterMs ?? -1;
          assert.ok(retry > 59_000 + i * 1000 && retry <= 60_000 + i * 1000, `claim ${i} waits its own window: ${retry}`);
        }
      });
      const readings = (await store.inspect(Array.from({ length: 40 }, (_, i) => ({ key: key(`l${i}`), counters: [limitOf(i)] })))).map(answered);
      readings.forEach((r, i) => assert.deepEqual([r[0]?.count, r[0]?.full], [i % 2 === 0 ? 1 : 2, true], `reading ${i}`));
    });

    it("is idempotent on the member: a retry never takes a second slot, even at the limit", async () => {
      const cap = spec("idem", 1);
      const first = await claim("same", [cap]);
      const again = await claim("same", [cap], { token: 2 });
      assert.equal(first.allowed, true);
      assert.equal(again.allowed, true);
      assert.equal(again.counters[0]?.alreadyHeld, true);
      assert.equal(again.counters[0]?.count, 1);
      assert.equal((await claim("other", [cap])).allowed, false);
    });

    it("gives the time until enough entries age out when max is below the count", async () => {
      const spread = (max: number) => spec("lowered", max, 20_000);
      for (let i = 0; i < 5; i++) {
        assert.equal((await claim(`m${i}`, [spread(5)])).allowed, true);
        await sleep(60);
      }
      const atFive = (await claim("x", [spread(5)])).counters[0]?.retryAfterMs ?? 0;
      const atTwo = (await claim("x", [spread(2)])).counters[0]?.retryAfterMs ?? 0;
      // with max 2, four of five entries must age out: the 4th oldest, ~3 x 60 ms after the oldest
      const gap = atTwo - atFive;
      assert.ok(gap >= 170 && gap <= 400, `gap ${gap} (atFive ${atFive}, atTwo ${atTwo})`);
    });

    it("reports every blocking cap with its own wait; a max of 0 never frees", async () => {
      const short = spec("short", 1, 10_000);
      const long = spec("long", 1, 20_000);
      await claim("m1", [short, long]);
      const refused = await claim("m2", [short, long, spec("zero", 0)]);
      assert.equal(refused.allowed, false);
      assert.deepEqual(refused.counters.map((c) => c.blocking), [true, true, true]);
      const [s, l, z] = refused.counters;
      assert.ok((s?.retryAfterMs ?? 0) <= 10_000 && (l?.retryAfterMs ?? 0) > 10_000, JSON.stringify(refused));
      assert.equal(z?.retryAfterMs, null);
    });

    it("slides the window: a slot frees once the oldest entry is older than the window", async () => {
      const cap = spec("slide", 1, 400);
      assert.equal((await claim("m1", [cap])).allowed, true);
      assert.equal((await claim("m2", [cap])).allowed, false);
      await sleep(450);
      assert.equal((await claim("m3", [cap])).allowed, true);
    });

    it("admits exactly max of 200 concurrent claims", async () => {
      const cap = spec("race", 7);
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => claim(`m${i}`, [cap, spec("other", 1000)])));
      assert.equal(results.filter((r) => r.allowed).length, 7);
      const other = await claim("probe", [spec("other", 1000)]);
      assert.equal(other.counters[0]?.count, 8, "only the 7 admitted sends counted in the second cap");
    });

    it("answers a batch of 5,000 claims over 1,000 recipients in order, each atomic on its own", async () => {
      const requests = Array.from({ length: 5000 }, (_, i) => ({
        key: key(`u${i % 1000}`), member: `m${i}`, token: 1, counters: [spec("burst", 3), spec("wide", 100)],
      }));
      const outcomes = (await store.claim(requests)).map(answered);
      // each recipient gets 5 sends in arrival order: the first 3 fit, the 4th and 5th are refused
      outcomes.forEach((o, i) => assert.equal(o.allowed, i < 3000, `send ${i}`));
      const refused = outcomes[4999];
      assert.deepEqual(refused.counters.map((c) => [c.count, c.blocking]), [[3, true], [3, false]]);
    });

    it("gives back only what that very attempt added (member and token)", async () => {
      const cap = spec("tok", 1);
      assert.equal((await claim("m1", [cap], { token: 11 })).allowed, true);
      // a retry of m1 (another attempt, token 12) adds nothing; giving it back must not free m1's slot
      assert.equal((await claim("m1", [cap], { token: 12 })).counters[0]?.alreadyHeld, true);
      assert.deepEqual(await release("m1", 12, ["tok"]), gave(0));
      assert.equal((await claim("m2", [cap])).allowed, false, "m1 still holds the slot");
      assert.deepEqual(await release("m1", 11, ["tok"]), gave(1));
      assert.equal((await claim("m2", [cap])).allowed, true, "the slot is free again");
    });

    it("a copy of a msg admitted on its first attempt's entry holds it too: the slot goes only with the last of their give-backs, in either order; the attempt's own entry found again is only its own", async () => {
      const cap = spec("co", 1);
      assert.equal((await claim("m1", [cap], { token: 21 })).allowed, true);
      const own = await claim("m1", [cap], { token: 21 });
      assert.deepEqual([own.allowed, own.counters[0]?.alreadyHeld, own.counters[0]?.coHeld ?? false], [true, true, false], "the same attempt again holds nothing more");
      const copy = await claim("m1", [cap], { token: 22 });
      assert.deepEqual([copy.allowed, copy.counters[0]?.alreadyHeld, copy.counters[0]?.coHeld], [true, true, true]);
      assert.deepEqual(await release("m1", 21, ["co"]), gave(0, 1), "the first attempt's give-back hands the entry to the copy");
      assert.equal((await claim("m2", [cap])).allowed, false, "the copy still holds the slot");
      assert.deepEqual(await release("m1", 22, ["co"]), gave(1), "the last give-back frees it");
      assert.equal((await claim("m2", [cap], { token: 5 })).allowed, true);
      // the other order: the copy first
      assert.deepEqual(await release("m2", 5, ["co"]), gave(1));
      assert.equal((await claim("m3", [cap], { token: 31 })).allowed, true);
      assert.equal((await claim("m3", [cap], { token: 32 })).counters[0]?.coHeld, true);
      assert.deepEqual(await release("m3", 32, ["co"]), gave(0), "the copy lets go of its hold: nothing freed, nothing handed");
      assert.equal((await claim("m4", [cap])).allowed, false, "the first attempt still holds it");
      assert.deepEqual(await release("m3", 31, ["co"]), gave(1));
      assert.equal((await claim("m4", [cap])).allowed, true);
    });

    it("a copy refused by another cap holds nothing: the first attempt's give-back frees its slot", async () => {
      const wide = spec("co-wide", 2);
      const full = spec("co-full", 1);
      assert.equal((await claim("m1", [wide], { token: 1 })).allowed, true);
      assert.equal((await claim("other", [full], { token: 1 })).allowed, true);
      assert.equal((await claim("m1", [wide, full], { token: 2 })).allowed, false);
      assert.deepEqual(await release("m1", 1, ["co-wide"]), gave(1));
    });

    it("a batch of 1,000 recipients' first attempts and copies: releasing the first attempts frees nothing, releasing the copies too frees every slot", async () => {
      const cap = spec("co-burst", 1);
      const items = Array.from({ length: 1_000 }, (_, i) => [1, 2].map((token) => ({ key: key(`c${i}`), member: `m${i}`, token, counters: [cap] }))).flat();
      const outcomes = (await store.claim(items)).map(answered);
      assert.ok(outcomes.every((o) => o.allowed));
      assert.equal(outcomes.filter((o) => o.counters[0]?.coHeld === true).length, 1_000);
      const giveBack = async (token: number) => (await store.release(Array.from({ length: 1_000 }, (_, i) => ({ kind: "cap" as const, key: key(`c${i}`), member: `m${i}`, token, fields: ["co-burst"] }))))
        .map(answered).reduce((sum, a) => gave(sum.given + a.given, sum.handed + a.handed), gave(0));
      const later = async (tag: string) => (await store.claim(Array.from({ length: 1_000 }, (_, i) => ({ key: key(`c${i}`), member: `${tag}${i}`, token: 9, counters: [cap] })))).map(answered).filter((o) => o.allowed).length;
      assert.deepEqual(await giveBack(1), gave(0, 1_000), "each first attempt hands its slot to its copy");
      assert.equal(await later("n"), 0, "each copy still holds its recipient's slot");
      assert.deepEqual(await giveBack(2), gave(1_000));
      assert.equal(await later("p"), 1_000, "every slot came back");
    });

    it("a duplicate mark held by two attempts of one msg goes with the last give-back, in either order", async () => {
      const listKey = `${prefix}:{o|r}:s`;
      const mark = `${prefix}:{o|r}:d:sms:co`;
      const check = async (member: string, token: string) => answered((await store.checkSuppression([{ listKey, channel: "sms", member, token, markKey: mark, markWindowMs: 60_000 }]))[0]);
      const giveBack = async (member: string, token: string) => answered((await store.release([{ kind: "mark", key: mark, value: markValue(member, token) }]))[0]);
      assert.deepEqual(await check("m1", "a"), { kind: "clear", mark: "new" });
      assert.deepEqual(await check("m1", "a"), { kind: "clear", mark: "held" }, "the same attempt again");
      assert.deepEqual(await check("m1", "b"), { kind: "clear", mark: "joined" });
      assert.deepEqual(await check("m1", "b"), { kind: "clear", mark: "held" });
      assert.deepEqual(await giveBack("m1", "a"), gave(0, 1), "the copy still holds it");
      assert.equal((await check("m2", "x")).kind, "duplicate");
      assert.deepEqual(await giveBack("m1", "b"), gave(1));
      assert.deepEqual(await check("m2", "x"), { kind: "clear", mark: "new" });
      assert.deepEqual(await check("m2", "y"), { kind: "clear", mark: "joined" });
      assert.deepEqual(await giveBack("m2", "y"), gave(0, 1));
      assert.deepEqual(await giveBack("m2", "z"), gave(0), "an attempt that never held it gives nothing back");
      assert.equal((await check("m3", "q")).kind, "duplicate");
      assert.deepEqual(await giveBack("m2", "x"), gave(1));
      assert.deepEqual(await check("m3", "q"), { kind: "clear", mark: "new" });
    });

    it("keeps one calendar counter whatever the zone: a send counts what came since its own period began", async () => {
      const now = Date.now();
      const day = 86_400_000;
      const here = { field: "daily", max: 2, windowMs: day, startMs: now - 3_600_000, resetAt: now - 3_600_000 + day };
      assert.equal((await claim("m1", [here])).allowed, true);
      assert.equal((await claim("m2", [here])).allowed, true);
      const refused = await claim("m3", [here]);
      assert.equal(refused.allowed, false);
      const retry = refused.counters[0]?.retryAfterMs ?? 0;
      assert.ok(retry > day - 3_700_000 && retry <= day - 3_500_000, `retry ${retry}`);
      // in a zone whose day began just now, the two earlier sends are yesterday's
      const elsewhere = { ...here, startMs: now + 1_000, resetAt: now + 1_000 + day };
      assert.equal((await claim("m4", [elsewhere])).allowed, true);
      assert.equal((await claim("m5", [here])).allowed, false, "the one counter still holds both of today's sends here");
    });

    it("records without checking, idempotent on the member", async () => {
      const cap = spec("rec", 1);
      assert.deepEqual(await record("e1", [cap, spec("rec2", 5)]), [1, 1]);
      assert.deepEqual(await record("e1", [cap]), [1]);
      assert.deepEqual(await record("e2", [cap]), [2], "record does not check the max");
      assert.equal((await claim("e3", [cap])).allowed, false);
    });

    it("releases a claim's counter entries and only its own duplicate marks, in one call", async () => {
      const cap = spec("rel", 1);
      const mark = `${prefix}:{o|r}:d:sms:abc`;
      await claim("m1", [cap, spec("rel-b", 5)], { token: 7 });
      await store.checkSuppression([{ listKey: `${prefix}:{o|r}:s`, channel: "sms", member: "m1", token: "t1", markKey: mark, markWindowMs: 60_000 }]);
      const given = await store.release([
        { kind: "cap", key: key(), member: "m1", token: 7, fields: ["rel", "rel-b"] },
        { kind: "mark", key: mark, value: markValue("m1", "t1") },
      ]);
      assert.deepEqual(given, [gave(2), gave(1)]);
      assert.equal((await claim("m2", [cap])).allowed, true, "the slot is free again");
      const [again] = await store.checkSuppression([{ listKey: `${prefix}:{o|r}:s`, channel: "sms", member: "m2", token: "t2", markKey: mark, markWindowMs: 60_000 }]);
      assert.deepEqual(again, { kind: "clear", mark: "new" });
      assert.deepEqual(await store.release([{ kind: "mark", key: mark, value: markValue("m1", "t1") }, { kind: "cap", key: key(), member: "m1", token: 7, fields: ["rel"] }]), [gave(0), gave(0)], "m2's mark and slot stay");
    });

    it("gives back a duplicate mark only for the attempt that made it: a retry of its messageId neither dupes nor frees it", async () => {
      const listKey = `${prefix}:{o|r}:s`;
      const mark = `${prefix}:{o|r}:d:sms:retry`;
      const check = async (member: string, token: string) => answered((await store.checkSuppression([{ listKey, channel: "sms", member, token, markKey: mark, markWindowMs: 60_000 }]))[0]);
      assert.deepEqual(await check("m1", "first"), { kind: "clear", mark: "new" });
      assert.deepEqual(await check("m1", "retry"), { kind: "clear", mark: "joined" }, "the same messageId is a retry, which holds the mark too");
      assert.deepEqual(await store.release([{ kind: "mark", key: mark, value: markValue("m1", "retry") }]), [gave(0, 1)], "the retry made no mark: it lets go of its hold, and the first attempt's stays");
      const dup = await check("m2", "other");
      assert.equal(dup.kind, "duplicate");
      assert.equal((dup as { firstMember: string }).firstMember, "m1", "named by its messageId alone");
      assert.deepEqual(await store.release([{ kind: "mark", key: mark, value: markValue("m1", "first") }]), [gave(1)]);
      assert.deepEqual(await check("m2", "other"), { kind: "clear", mark: "new" });
    });

    it("reads a counter without claiming", async () => {
      const cap = spec("look", 2, 30_000);
      await claim("m1", [cap]);
      const inspect = async () => answered((await store.inspect([{ key: key(), counters: [cap] }]))[0]);
      assert.deepEqual(await inspect(), [{ count: 1, full: false, retryAfterMs: null }]);
      await claim("m2", [cap]);
      const [full] = await inspect();
      assert.equal(full?.full, true);
      assert.ok((full?.retryAfterMs ?? 0) > 29_000);
      assert.equal((await claim("m3", [cap])).allowed, false, "inspecting took no slot");
    });

    it("finds a block-list entry for the channel or for every channel", async () => {
      const listKey = `${prefix}:{o|r}:s`;
      const indexKey = `${prefix}:{o}:sidx`;
      const check = async (channel: string) => (await store.checkSuppression([{ listKey, channel, member: "m", token: "t", markWindowMs: 0 }]))[0];
      assert.deepEqual(await check("sms"), { kind: "clear", mark: "none" });
      await store.writeSuppressions([{ listKey, field: "sms", indexKey, indexField: "sms|r", entry: '{"reason":"STOP"}' }]);
      assert.deepEqual(await check("sms"), { kind: "listed", field: "sms", entry: '{"reason":"STOP"}' });
      assert.deepEqual(await check("email"), { kind: "clear", mark: "none" });
      await store.writeSuppressions([{ listKey, field: "*", indexKey, indexField: "*|r", entry: '{"reason":"all"}' }]);
      assert.deepEqual(await check("email"), { kind: "listed", field: "*", entry: '{"reason":"all"}' });
      await store.writeSuppressions([
        { listKey, field: "*", indexKey, indexField: "*|r" },
        { listKey, field: "sms", indexKey, indexField: "sms|r" },
      ]);
      assert.deepEqual(await check("sms"), { kind: "clear", mark: "none" });
      assert.deepEqual((await store.listSuppressions(indexKey, "0", 100)).entries, []);
    });

    it("answers a batch of suppression checks with and without marks, in order", async () => {
      const listKey = (r: string) => `${prefix}:{o|${r}}:s`;
      const indexKey = `${prefix}:{o}:sidx`;
      await store.writeSuppressions([{ listKey: listKey("blocked"), field: "*", indexKey, indexField: "*|blocked", entry: "{}" }]);
      const answers = await store.checkSuppression([
        { listKey: listKey("a"), channel: "sms", member: "m1", token: "t1", markKey: `${prefix}:{o|a}:d:sms:h`, markWindowMs: 60_000 },
        { listKey: listKey("blocked"), channel: "sms", member: "m2", token: "t2", markWindowMs: 0 },
        { listKey: listKey("a"), channel: "sms", member: "m3", token: "t3", markKey: `${prefix}:{o|a}:d:sms:h`, markWindowMs: 60_000 },
        { listKey: listKey("b"), channel: "sms", member: "m4", token: "t4", markWindowMs: 0 },
      ]);
      assert.deepEqual(answers.map((a) => answered(a).kind), ["clear", "listed", "duplicate", "clear"]);
    });

    it("pages through an index of 2,500 block-list entries", async () => {
      const indexKey = `${prefix}:{o}:sidx`;
      await store.writeSuppressions(Array.from({ length: 2500 }, (_, i) => ({
        listKey: `${prefix}:{o|r${i}}:s`, field: "*", indexKey, indexField: `*|r${i}`, entry: `{"i":${i}}`,
      })));
      const seen = new Set<string>();
      let cursor = "0";
      do {
        const page = await store.listSuppressions(indexKey, cursor, 500);
        page.entries.forEach((e) => seen.add(e));
        cursor = page.cursor;
      } while (cursor !== "0");
      assert.equal(seen.size, 2500);
    });

    it("marks duplicate content for the window; the same member again is a retry, not a duplicate", async () => {
      const base = { listKey: `${prefix}:{o|r}:s`, channel: "sms", markKey: `${prefix}:{o|r}:d:sms:h1`, markWindowMs: 400, token: "t" };
      const check = async (member: string) => answered((await store.checkSuppression([{ ...base, member }]))[0]);
      assert.deepEqual(await check("m1"), { kind: "clear", mark: "new" });
      assert.deepEqual(await check("m1"), { kind: "clear", mark: "held" });
      const dup = await check("m2");
      assert.equal(dup.kind, "duplicate");
      assert.ok(dup.kind === "duplicate" && dup.firstMember === "m1" && dup.retryAfterMs > 0 && dup.retryAfterMs <= 400);
      await sleep(450);
      assert.deepEqual(await check("m2"), { kind: "clear", mark: "new" });
    });

    it("treats recipients, cap fields, members and block-list fields named like Object.prototype members as plain names", async () => {
      const names = ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"];
      for (const name of names) {
        const cap = spec(name, 1);
        assert.equal((await claim(name, [cap], { recipient: name })).allowed, true, name);
        const refused = await claim(`${name}-2`, [cap], { recipient: name });
        assert.equal(refused.allowed, false, name);
        assert.equal(refused.counters[0]?.count, 1, name);
      }
      // every name a field of one recipient's hash: each its own counter
      const fields = names.map((name) => spec(name, 1));
      assert.deepEqual((await claim("__proto__", fields)).counters.map((c) => c.count), [1, 1, 1, 1, 1]);
      assert.equal((await claim("constructor", fields)).allowed, false);
      assert.deepEqual(await record("valueOf", [spec("toString", 5)]), [2]);
      assert.deepEqual(await release("__proto__", 1, names), gave(5));
      const readings = answered((await store.inspect([{ key: key(), counters: fields }]))[0]);
      assert.deepEqual(readings.map((c) => c.count), [0, 1, 0, 0, 0], "only valueOf's record in toString is left");

      const listKey = `${prefix}:{o|__proto__}:s`;
      const indexKey = `${prefix}:{__proto__}:sidx`;
      const check = async (channel: string) => answered((await store.checkSuppression([{ listKey, channel, member: "m", token: "t", markWindowMs: 0 }]))[0]);
      for (const name of names) assert.deepEqual(await check(name), { kind: "clear", mark: "none" }, name);
      await store.writeSuppressions(names.map((name) => ({ listKey, field: name, indexKey, indexField: `${name}|__proto__`, entry: `{"n":"${name}"}` })));
      for (const name of names) assert.deepEqual(await check(name), { kind: "listed", field: name, entry: `{"n":"${name}"}` }, name);
      assert.equal((await store.listSuppressions(indexKey, "0", 100)).entries.length, names.length);
      const mark = { listKey: `${prefix}:{o|x}:s`, channel: "sms", markKey: `${prefix}:{o|x}:d:sms:constructor`, markWindowMs: 60_000, token: "t" };
      assert.deepEqual(answered((await store.checkSuppression([{ ...mark, member: "__proto__" }]))[0]), { kind: "clear", mark: "new" });
      const dup = answered((await store.checkSuppression([{ ...mark, member: "toString" }]))[0]);
      assert.equal(dup.kind === "duplicate" && dup.firstMember, "__proto__");
    });

    it("answers from the store's own clock", async () => {
      const r = await claim("m", [spec("clock", 1)]);
      assert.ok(Math.abs(r.nowMs - Date.now()) < 2000);
    });

    describe("throughput ceilings (GCRA)", () => {
      const ceiling = (name = "acme") => ceilingKey(prefix, name, { kind: "org" });
      const reserve = async (n: number, rate: number, burst: number, maxWaitMs: number, key = ceiling()): Promise<ThroughputOutcome[]> => {
        const limit = gcraLimit(rate, 1, burst);
        return (await store.throughput(Array.from({ length: n }, () => ({ key, ...limit, maxWaitUs: maxWaitMs * 1000 })))).map((r) => answered(r));
      };

      it("skip mode: of 30 at once at 10/s with a burst of 10, exactly 10 pass; the rest conform in exactly 100 ms", async () => {
        const out = await reserve(30, 10, 10, 0);
        assert.equal(out.filter((o) => o.allowed).length, 10);
        assert.deepEqual(out.slice(0, 10).map((o) => o.waitUs), new Array(10).fill(0));
        assert.deepEqual(out.slice(10).map((o) => [o.allowed, o.waitUs]), new Array(20).fill([false, 100_000]));
        assert.ok(Math.abs(out[0].nowUs / 1000 - Date.now()) < 2000, "the store's clock, in µs");
      });

      it("queue mode: each msg reserves the next free instant, T apart, and past maxWait nothing is reserved", async () => {
        const out = await reserve(40, 20, 1, 60_000);
        assert.ok(out.every((o) => o.allowed));
        assert.deepEqual(out.map((o) => o.waitUs), Array.from({ length: 40 }, (_, i) => i * 50_000));
        // one call (one clock reading): five within a wait of 205 ms, then three that may wait 200 ms at most
        const limit = gcraLimit(20, 1, 1);
        const key = ceiling("other");
        const mixed = (await store.throughput([
          ...Array.from({ length: 5 }, () => ({ key, ...limit, maxWaitUs: 205_000 })),
          ...Array.from({ length: 3 }, () => ({ key, ...limit, maxWaitUs: 200_000 })),
        ])).map((r) => answered(r));
        assert.deepEqual(mixed.map((o) => [o.allowed, o.waitUs]), [
          [true, 0], [true, 50_000], [true, 100_000], [true, 150_000], [true, 200_000],
          [false, 250_000], [false, 250_000], [false, 250_000],
        ], "a refusal moves nothing");
      });

      it("gives back reservations: the TAT moves back by n × T, never into the past", async () => {
        const limit = gcraLimit(10, 1, 1);
        const at = (o: ThroughputOutcome | undefined) => (o ? o.nowUs + o.waitUs : 0);
        const held = await reserve(5, 10, 1, 60_000);
        assert.deepEqual(held.map((o) => o.waitUs), [0, 100_000, 200_000, 300_000, 400_000]);
        const [back] = await store.throughputRefund([{ key: ceiling(), ...limit, count: 2, lastUs: at(held[4]) }]);
        assert.ok(typeof back === "number" && back > 0);
        const next = (await reserve(1, 10, 1, 60_000))[0];
        assert.ok(next && next.waitUs > 250_000 && next.waitUs <= 300_000, `the next takes the first instant given back (${next?.waitUs} µs, not 500,000)`);
        await store.throughputRefund([{ key: ceiling(), ...limit, count: 100, lastUs: at(next) }]);
        assert.deepEqual((await reserve(2, 10, 1, 0)).map((o) => o.allowed), [true, false], "back to now, not before it: no extra burst");
        assert.deepEqual(await store.throughputRefund([{ key: ceiling("never-seen"), ...limit, count: 1, lastUs: 0 }]), [0]);
      });

      it("gives back nothing when something was reserved after the dropped msgs (another gate's or instance's msg keeps its instant)", async () => {
        const limit = gcraLimit(10, 1, 3);
        const key = ceiling("shared");
        const mine = (await store.throughput(Array.from({ length: 6 }, () => ({ key, ...limit, maxWaitUs: 60_000_000 })))).map((r) => answered(r));
        const theirs = answered((await store.throughput([{ key, ...limit, maxWaitUs: 60_000_000 }]))[0]);
        const last = mine[5];
        const [kept] = await store.throughputRefund([{ key, ...limit, count: 3, lastUs: last.nowUs + last.waitUs }]);
        const after = answered((await store.throughput([{ key, ...limit, maxWaitUs: 60_000_000 }]))[0]);
        assert.ok(typeof kept === "number" && kept > 0);
        // the next instant follows theirs, T after it: nothing was given back under it
        const theirsAt = theirs.nowUs + theirs.waitUs;
        assert.ok(Math.abs(after.nowUs + after.waitUs - (theirsAt + limit.emissionUs)) <= 1, `next at ${after.nowUs + after.waitUs - theirsAt} µs after theirs`);
      });

      it("keeps ceilings apart and frees the ceiling as time passes", async () => {
        assert.equal((await reserve(1, 10, 1, 0, ceilingKey(prefix, "acme", { kind: "channel", channel: "sms" })))[0]?.allowed, true);
        assert.equal((await reserve(1, 10, 1, 0, ceilingKey(prefix, "acme", { kind: "key", value: "sms" })))[0]?.allowed, true);
        assert.equal((await reserve(1, 10, 1, 0))[0]?.allowed, true);
        const refused = (await reserve(1, 10, 1, 0))[0];
        assert.equal(refused?.allowed, false);
        await sleep(Math.ceil((refused?.waitUs ?? 0) / 1000) + 5);
        assert.equal((await reserve(1, 10, 1, 0))[0]?.allowed, true);
      });
    });
  });
}
