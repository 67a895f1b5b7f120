import assert from "node:assert/strict";
import type { AdmissionStore, CounterSpec } from "../../src/core/stores/admissionStore";
import { sleep, uniquePrefix } from "../support/redis";

/**
 * One suite, every store: the memory store and the Redis store must give the
 * same answers for the same inputs (SPEC §5).
 */
export function counterStoreConformance(label: string, open: () => Promise<AdmissionStore>, close: (s: AdmissionStore) => Promise<void>): void {
  describe(`counter store conformance: ${label}`, function () {
    let store: AdmissionStore;
    let prefix: string;
    const spec = (name: string, max: number, windowMs = 60_000): CounterSpec => ({ key: `${prefix}:{o|r}:c:${name}`, max, windowMs });

    beforeEach(async () => {
      store = await open();
      prefix = uniquePrefix("conf");
    });
    afterEach(async () => close(store));

    it("admits up to max, then refuses with the wait until a slot frees", async () => {
      const cap = spec("a", 3, 30_000);
      for (let i = 1; i <= 3; i++) {
        const r = await store.claim(`m${i}`, [cap]);
        assert.equal(r.allowed, true);
        assert.equal(r.counters[0]?.count, i);
      }
      const refused = await store.claim("m4", [cap]);
      assert.equal(refused.allowed, false);
      assert.equal(refused.counters[0]?.blocking, true);
      const retry = refused.counters[0]?.retryAfterMs ?? -1;
      assert.ok(retry > 29_000 && retry <= 30_000, `retry ${retry}`);
    });

    it("claims nothing in any cap when one cap refuses (no partial claim)", async () => {
      const strict = spec("strict", 1);
      const loose = spec("loose", 5);
      assert.equal((await store.claim("m1", [strict, loose])).allowed, true);
      const refused = await store.claim("m2", [strict, loose]);
      assert.equal(refused.allowed, false);
      assert.deepEqual(refused.counters.map((c) => c.blocking), [true, false]);
      assert.equal(refused.counters[1]?.count, 1);
      const looseOnly = await store.claim("m3", [loose]);
      assert.equal(looseOnly.counters[0]?.count, 2, "the refused send must not have taken a loose slot");
    });

    it("is idempotent on the member: a retry never takes a second slot, even at the limit", async () => {
      const cap = spec("idem", 1);
      const first = await store.claim("same", [cap]);
      const again = await store.claim("same", [cap]);
      assert.equal(first.allowed, true);
      assert.equal(again.allowed, true);
      assert.equal(again.counters[0]?.alreadyHeld, true);
      assert.equal(again.counters[0]?.count, 1);
      assert.equal((await store.claim("other", [cap])).allowed, false);
    });

    it("gives the time until enough entries age out when max is below the count", async () => {
      const spread = (max: number) => spec("lowered", max, 20_000);
      for (let i = 0; i < 5; i++) {
        assert.equal((await store.claim(`m${i}`, [spread(5)])).allowed, true);
        await sleep(60);
      }
      const atFive = (await store.claim("x", [spread(5)])).counters[0]?.retryAfterMs ?? 0;
      const atTwo = (await store.claim("x", [spread(2)])).counters[0]?.retryAfterMs ?? 0;
      // with max 2, four of five entries must age out: the 4th oldest, ~3 x 60 ms after the oldest
      const gap = atTwo - atFive;
      assert.ok(gap >= 170 && gap <= 400, `gap ${gap} (atFive ${atFive}, atTwo ${atTwo})`);
    });

    it("reports every blocking cap with its own wait; a max of 0 never frees", async () => {
      const short = spec("short", 1, 10_000);
      const long = spec("long", 1, 20_000);
      await store.claim("m1", [short, long]);
      const refused = await store.claim("m2", [short, long, spec("zero", 0)]);
      assert.equal(refused.allowed, false);
      assert.deepEqual(refused.counters.map((c) => c.blocking), [true, true, true]);
      const [s, l, z] = refused.counters;
      assert.ok((s?.retryAfterMs ?? 0) <= 10_000 && (l?.retryAfterMs ?? 0) > 10_000, JSON.stringify(refused));
      assert.equal(z?.retryAfterMs, null);
    });

    it("slides the window: a slot frees once the oldest entry is older than the window", async () => {
      const cap = spec("slide", 1, 400);
      assert.equal((await store.claim("m1", [cap])).allowed, true);
      assert.equal((await store.claim("m2", [cap])).allowed, false);
      await sleep(450);
      assert.equal((await store.claim("m3", [cap])).allowed, true);
    });

    it("admits exactly max of 200 concurrent claims", async () => {
      const cap = spec("race", 7);
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => store.claim(`m${i}`, [cap, spec("other", 1000)])));
      assert.equal(results.filter((r) => r.allowed).length, 7);
      const other = await store.claim("probe", [spec("other", 1000)]);
      assert.equal(other.counters[0]?.count, 8, "only the 7 admitted sends counted in the second cap");
    });

    it("records without checking, idempotent on the member", async () => {
      const cap = spec("rec", 1);
      assert.deepEqual(await store.record("e1", [cap, spec("rec2", 5)]), [1, 1]);
      assert.deepEqual(await store.record("e1", [cap]), [1]);
      assert.deepEqual(await store.record("e2", [cap]), [2], "record does not check the max");
      assert.equal((await store.claim("e3", [cap])).allowed, false);
    });

    it("releases a member's counter entries and only its own duplicate marks, in one step", async () => {
      const cap = spec("rel", 1);
      const mark = `${prefix}:{o|r}:d:sms:abc`;
      await store.claim("m1", [cap, spec("rel-b", 5)]);
      await store.checkSuppression({ listKey: `${prefix}:{o|r}:s`, channel: "sms", member: "m1", markKey: mark, markWindowMs: 60_000 });
      const given = await store.release("m1", [{ key: cap.key, kind: "z" }, { key: spec("rel-b", 5).key, kind: "z" }, { key: mark, kind: "k" }]);
      assert.equal(given, 3);
      assert.equal((await store.claim("m2", [cap])).allowed, true, "the slot is free again");
      const again = await store.checkSuppression({ listKey: `${prefix}:{o|r}:s`, channel: "sms", member: "m2", markKey: mark, markWindowMs: 60_000 });
      assert.deepEqual(again, { kind: "clear", mark: "new" });
      assert.equal(await store.release("m1", [{ key: mark, kind: "k" }, { key: cap.key, kind: "z" }]), 0, "m2's mark and slot stay");
    });

    it("finds a block-list entry for the channel or for every channel", async () => {
      const listKey = `${prefix}:{o|r}:s`;
      const indexKey = `${prefix}:{o}:sidx`;
      const check = (channel: string) => store.checkSuppression({ listKey, channel, member: "m", markWindowMs: 0 });
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
      const base = { listKey: `${prefix}:{o|r}:s`, channel: "sms", markKey: `${prefix}:{o|r}:d:sms:h1`, markWindowMs: 400 };
      assert.deepEqual(await store.checkSuppression({ ...base, member: "m1" }), { kind: "clear", mark: "new" });
      assert.deepEqual(await store.checkSuppression({ ...base, member: "m1" }), { kind: "clear", mark: "held" });
      const dup = await store.checkSuppression({ ...base, member: "m2" });
      assert.equal(dup.kind, "duplicate");
      assert.ok(dup.kind === "duplicate" && dup.firstMember === "m1" && dup.retryAfterMs > 0 && dup.retryAfterMs <= 400);
      await sleep(450);
      assert.deepEqual(await store.checkSuppression({ ...base, member: "m2" }), { kind: "clear", mark: "new" });
    });

    it("treats keys, members and block-list fields named like Object.prototype members as plain names", async () => {
      const names = ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"];
      for (const name of names) {
        const cap = { key: `${prefix}:{${name}|${name}}:c:${name}`, max: 1, windowMs: 60_000 };
        assert.equal((await store.claim(name, [cap])).allowed, true, name);
        const refused = await store.claim(`${name}-2`, [cap]);
        assert.equal(refused.allowed, false, name);
        assert.equal(refused.counters[0]?.count, 1, name);
        assert.deepEqual(await store.record(name, [cap]), [1], name);
        assert.equal(await store.release(name, [{ key: cap.key, kind: "z" }]), 1, name);
        assert.deepEqual((await store.inspect([cap])).map((c) => c.count), [0], name);
      }
      const listKey = `${prefix}:{o|__proto__}:s`;
      const indexKey = `${prefix}:{__proto__}:sidx`;
      for (const name of names) {
        assert.deepEqual(await store.checkSuppression({ listKey, channel: name, member: "m", markWindowMs: 0 }), { kind: "clear", mark: "none" }, name);
      }
      await store.writeSuppressions(names.map((name) => ({ listKey, field: name, indexKey, indexField: `${name}|__proto__`, entry: `{"n":"${name}"}` })));
      for (const name of names) {
        assert.deepEqual(await store.checkSuppression({ listKey, channel: name, member: "m", markWindowMs: 0 }), { kind: "listed", field: name, entry: `{"n":"${name}"}` }, name);
      }
      assert.equal((await store.listSuppressions(indexKey, "0", 100)).entries.length, names.length);
      const mark = { listKey: `${prefix}:{o|x}:s`, channel: "sms", markKey: `${prefix}:{o|x}:d:sms:constructor`, markWindowMs: 60_000 };
      assert.deepEqual(await store.checkSuppression({ ...mark, member: "__proto__" }), { kind: "clear", mark: "new" });
      const dup = await store.checkSuppression({ ...mark, member: "toString" });
      assert.equal(dup.kind === "duplicate" && dup.firstMember, "__proto__");
    });

    it("answers from the store's own clock", async () => {
      const r = await store.claim("m", [spec("clock", 1)]);
      assert.ok(Math.abs(r.nowMs - Date.now()) < 2000);
    });
  });
}
