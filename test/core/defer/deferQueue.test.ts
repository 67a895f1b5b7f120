import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Cluster, type Redis } from "ioredis";
import { COMPACT_PART_BYTES, COMPACT_SLICE, MemoryDeferStore } from "../../../src/core/hold/memoryHeldQueues";
import { deferCodec } from "../../../src/core/hold/codec";
import { MAX_MERGED, type DeferInput, type DeferQueue, type DeferredMsg } from "../../../src/core/hold/heldQueue";
import { SendFieldError } from "../../../src/core/errors";
import { MemoryDeferQueue } from "../../../src/core/hold/memoryHeldQueue";
import { deferHashTag, RedisDeferQueue } from "../../../src/redis/redisHeldQueue";
import { RedisGateRegistry } from "../../../src/redis/gateRegistry";
import { legacyDeferKeys, migrateLegacyQueue } from "../../../src/migrations/queue";
import { dropPrefix, redisClient, sleep, uniquePrefix } from "../../support/redis";
import { SuiteStore } from "../../support/suiteStore";
import { prefixOnMaster } from "../../support/masterPrefix";
import { legacyMemoryQueue } from "../../../src/migrations/migrations";
import type { Adoption } from "../../../src/core/hold/memoryHeldQueues";
import { DeferJournal, type JournalRewrite } from "../../../src/core/hold/journal";
import { pbkdf2 } from "node:crypto";
import { promisify } from "node:util";

/** libuv's thread pool: 4 unless UV_THREADPOOL_SIZE says otherwise */
function threadPoolSize(): number {
  const size = Number(process.env.UV_THREADPOOL_SIZE);
  return Number.isInteger(size) && size > 0 ? size : 4;
}

/** Runs `run` with every compaction's rewrite handed to `watch` as it begins (to wrap its calls); the journal's own after. */
async function watchingRewrites(watch: (rewrite: JournalRewrite) => void, run: () => Promise<void>): Promise<void> {
  const begin = DeferJournal.prototype.beginRewrite;
  DeferJournal.prototype.beginRewrite = function beginWatched(this: DeferJournal) {
    const rewrite = begin.call(this);
    watch(rewrite);
    return rewrite;
  };
  try {
    await run();
  } finally {
    DeferJournal.prototype.beginRewrite = begin;
  }
}

/** One gate's queue as seen by a test: the queue, and the same queue from another instance. */
interface Harness {
  queue: DeferQueue;
  /** the same queue from a second instance (Redis: its own client; memory: the one process) */
  otherInstance(): Promise<DeferQueue>;
  /** every key, field and value the queue stored */
  raw(): Promise<string[]>;
  done(): Promise<void>;
}

interface HarnessOptions {
  /** encrypt stored msgs (hashRecipients) */
  encrypt?: boolean;
}

const GATE = "gate-1";

let seq = 0;
function entry(over: Partial<DeferredMsg> = {}): DeferInput {
  const now = Date.now();
  return { id: `m${++seq}`, gate: GATE, dueAt: now - 1000, deferrals: 1, firstDeferredAt: now - 1000, msg: { payload: seq }, ...over };
}

/** Takes until nothing is due, acking each batch. */
async function drain(queue: DeferQueue, batch: number, leaseMs = 30_000): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const msgs = await queue.takeDue(batch, leaseMs);
    if (msgs.length === 0) return ids;
    assert.ok(msgs.length <= batch);
    ids.push(...msgs.map((m) => m.id));
    await queue.ack(msgs.map((m) => m.id));
  }
}

const tricky = {
  text: "héllo wörld — 你好 🚀 مرحبا",
  separators: "\u2028\u2029 \"quoted\" \\ back / slash \n\t\u0000",
  lone: "\ud800 alone",
  numbers: [0, -1, 2.5, 3.141592653589793, 0.1 + 0.2, 1e21, 5e-324, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 1764480000000.123],
  flags: [true, false, null],
  nested: { a: { b: { c: [1, { d: "e" }, [[]]] } }, empty: {}, none: [] },
  "key with spaces:and{braces}|pipes": "v",
};

function deferQueueConformance(label: string, open: (options?: HarnessOptions) => Promise<Harness>): void {
  describe(`defer queue conformance: ${label}`, function () {
    let h: Harness;
    beforeEach(async () => {
      h = await open();
    });
    afterEach(async () => h.done());

    it("hands out nothing before dueAt, and the msg once it is due", async () => {
      const dueAt = Date.now() + 300;
      const { id } = await h.queue.defer(entry({ dueAt }));
      assert.deepEqual(await h.queue.takeDue(10, 5000), []);
      assert.equal(await h.queue.nextDueAt(), dueAt);
      assert.equal(await h.queue.size(), 1);
      await sleep(dueAt - Date.now() + 30);
      const taken = await h.queue.takeDue(10, 5000);
      assert.deepEqual(taken.map((m) => m.id), [id]);
      assert.equal(taken[0]?.dueAt, dueAt);
    });

    it("takes a tag's held msgs before they are due, each once, and leaves the other tags' and untagged msgs", async () => {
      const later = Date.now() + 60_000;
      const results = await h.queue.deferMany([
        { entry: entry({ id: "a1", dueAt: later }), tag: "ceiling-a" },
        { entry: entry({ id: "a2", dueAt: later + 1 }), tag: "ceiling-a" },
        { entry: entry({ id: "b1", dueAt: later }), tag: "ceiling-b" },
        { entry: entry({ id: "plain", dueAt: later }) },
      ]);
      assert.deepEqual(results.map((r) => (r instanceof Error ? r.message : r.id)), ["a1", "a2", "b1", "plain"]);
      const other = await h.otherInstance();
      const [mine, theirs] = await Promise.all([h.queue.takeTagged("ceiling-a", 10, 5000), other.takeTagged("ceiling-a", 10, 5000)]);
      assert.deepEqual([...mine, ...theirs].map((m) => m.id).sort(), ["a1", "a2"], "each handed out once");
      await h.queue.ack(["a1", "a2"]);
      assert.equal(await h.queue.size(), 2);
      assert.deepEqual(await h.queue.takeTagged("ceiling-a", 10, 5000), []);
      assert.deepEqual((await h.queue.takeTagged("ceiling-b", 10, 5000)).map((m) => m.id), ["b1"]);
      await assert.rejects(h.queue.takeTagged("no spaces", 10, 5000), /tag/);
    });

    it("hands out the earliest first, at most limit at a time", async () => {
      const now = Date.now();
      const offsets = [-50, -500, -10, -3000, -200, -1];
      for (const [i, off] of offsets.entries()) await h.queue.defer(entry({ id: `e${i}`, dueAt: now + off }));
      const first = await h.queue.takeDue(4, 5000);
      assert.deepEqual(first.map((m) => m.dueAt - now), [-3000, -500, -200, -50]);
      const rest = await h.queue.takeDue(4, 5000);
      assert.deepEqual(rest.map((m) => m.dueAt - now), [-10, -1]);
    });

    it("hands each of 1,000 due msgs to exactly one of two instances taking at once", async () => {
      const other = await h.otherInstance();
      const ids = Array.from({ length: 1000 }, (_, i) => `x${i}`);
      await Promise.all(ids.map((id) => h.queue.defer(entry({ id }))));
      assert.equal(await h.queue.size(), 1000);
      const [a, b] = await Promise.all([drain(h.queue, 50), drain(other, 50)]);
      const all = [...a, ...b];
      assert.equal(all.length, 1000, `taken ${all.length}`);
      assert.equal(new Set(all).size, 1000, "an id was handed out twice");
      assert.deepEqual([...all].sort(), [...ids].sort());
      assert.equal(await h.queue.size(), 0);
      assert.equal(await other.size(), 0);
    });

    it("hands a msg whose lease expired (taken, never acked) to the other instance", async () => {
      const other = await h.otherInstance();
      const { id } = await h.queue.defer(entry());
      const before = Date.now();
      assert.deepEqual((await h.queue.takeDue(10, 200)).map((m) => m.id), [id]);
      assert.deepEqual(await other.takeDue(10, 200), [], "a live lease is nobody else's");
      assert.equal(await other.size(), 1, "a leased msg is still held");
      const next = await other.nextDueAt();
      assert.ok(next !== null && next >= before + 150 && next <= Date.now() + 250, `next ${next}`);
      await sleep(260);
      const again = await other.takeDue(10, 5000);
      assert.deepEqual(again.map((m) => m.id), [id]);
      assert.deepEqual(await h.queue.takeDue(10, 5000), []);
      await other.ack([id]);
      assert.equal(await h.queue.size(), 0);
    });

    it("holds a msg leased to its holder (leaseUntil): no take hands it out, an ack removes it, and it comes back when the lease ends", async () => {
      const other = await h.otherInstance();
      const now = Date.now();
      const [released, kept, dies] = await h.queue.deferMany([
        { entry: entry({ dueAt: now - 5 }), leaseUntil: now + 60_000 },
        { entry: entry({ dueAt: now - 5 }), leaseUntil: now + 60_000, tag: "t1" },
        { entry: entry({ dueAt: now - 5 }), leaseUntil: now + 250 },
      ]);
      const [releasedId, keptId, diesId] = [released, kept, dies].map((r) => (r as { id: string }).id) as [string, string, string];
      assert.equal(await h.queue.size(), 3, "a leased msg is held");
      assert.deepEqual(await h.queue.takeDue(10, 5000), [], "due, but its holder releases it");
      assert.deepEqual(await other.takeDue(10, 5000), []);
      assert.deepEqual(await other.takeTagged("t1", 10, 5000), [], "msg.flush elsewhere leaves it to its holder");
      await h.queue.ack([releasedId]);
      assert.equal(await h.queue.size(), 2);
      // its holder died: the lease ends and whoever takes next releases it
      await sleep(Math.max(0, now + 250 - Date.now()) + 40);
      assert.deepEqual((await other.takeDue(10, 5000)).map((m) => m.id), [diesId]);
      await other.ack([diesId]);
      // its holder closes before the instant: holding it again without a lease hands it to the pollers, due as it was
      await h.queue.deferMany([{ entry: entry({ id: keptId, dueAt: now - 5 }), tag: "t1" }]);
      assert.deepEqual((await other.takeTagged("t1", 10, 5000)).map((m) => m.id), [keptId]);
      await other.ack([keptId]);
      assert.equal(await h.queue.size(), 0);
    });

    it("holds a batch of leased msgs under several tags at once: each filed under its tag for as long as it is held, what a former holding left undone", async () => {
      const other = await h.otherInstance();
      const now = Date.now();
      // a msg held with a collapse key and one merged into it, both due: then the merge target is held again leased (taken back
      // by its holder, as after a retried hold), and the collapse key's msg is re-held leased under another id's tag
      await h.queue.deferMany([{ entry: entry({ id: "target", dueAt: now + 60_000 }), collapseKey: "ck" }]);
      const merged = await h.queue.deferMany([{ entry: entry({ id: "joiner", dueAt: now + 60_000, msg: { payload: "joined" } }), collapseKey: "ck" }]);
      assert.deepEqual(merged, [{ id: "target", collapsedInto: "target" }]);
      const leaseUntil = now + 300;
      const items = Array.from({ length: 1_500 }, (_, i) => ({
        entry: entry({ id: `l${i}`, dueAt: now + 60_000, ...(i % 3 === 0 ? { expiresAt: now + 600_000 } : {}) }),
        leaseUntil, ...(i % 2 === 0 ? { tag: `tag-${i % 4}` } : {}),
      }));
      const results = await h.queue.deferMany([...items, { entry: entry({ id: "target", dueAt: now + 60_000 }), leaseUntil, tag: "tag-x" }]);
      assert.deepEqual(results.map((r) => (r instanceof Error ? r.message : r.id)), [...items.map((_, i) => `l${i}`), "target"]);
      assert.equal(await h.queue.size(), 1_501);
      assert.deepEqual(await other.takeDue(2_000, 5000), [], "every msg is leased to its holder");
      assert.deepEqual(await other.takeTagged("tag-0", 2_000, 5000), [], "msg.reset elsewhere leaves a leased msg to its holder");
      // the collapse key no longer names the msg taken back leased: a new msg under it is held on its own
      assert.deepEqual(await h.queue.deferMany([{ entry: entry({ id: "fresh", dueAt: now + 60_000 }), collapseKey: "ck" }]), [{ id: "fresh" }]);
      // its holder died: the leases end, a take puts them back where they were (not due yet), and msg.reset elsewhere
      // takes each tag's msgs, and only those
      await sleep(Math.max(0, leaseUntil - Date.now()) + 40);
      assert.deepEqual(await other.takeDue(10, 5000), []);
      const tagged = (tag: string): string[] => items.flatMap((item, i) => (item.tag === tag ? [`l${i}`] : [])).sort();
      const taken = (await other.takeTagged("tag-0", 2_000, 5000)).map((m) => m.id).sort();
      assert.deepEqual(taken, tagged("tag-0"), "tag-0, though a take met its msgs while they were leased");
      await other.ack([...taken, ...taken]);
      // a take whose taker dies: its lease ends, and the next take of the tag finds the msgs again
      assert.deepEqual((await other.takeTagged("tag-2", 2_000, 100)).map((m) => m.id).sort(), tagged("tag-2"));
      await sleep(140);
      assert.deepEqual(await other.takeDue(10, 5000), []);
      const again = (await other.takeTagged("tag-2", 2_000, 5000)).map((m) => m.id).sort();
      assert.deepEqual(again, tagged("tag-2"), "tag-2, taken again after the first taker's lease ended");
      await other.ack(again);
      const [target] = await other.takeTagged("tag-x", 10, 5000);
      assert.equal(target?.id, "target");
      assert.deepEqual(target?.collapsed?.map((m) => m.payload), ["joined"], "a held msg taken back keeps what was merged into it");
      await other.ack(["target"]);
      assert.equal(await h.queue.size(), 751, "the untagged msgs and the fresh one are left");
    });

    it("applies a batch's items one after another: an id held twice, or held leased after a collapse key, ends as the last item left it", async () => {
      const other = await h.otherInstance();
      const now = Date.now();
      await h.queue.deferMany([{ entry: entry({ id: "twice", dueAt: now + 60_000 }), collapseKey: "k1" }]);
      await h.queue.deferMany([{ entry: entry({ id: "joiner", dueAt: now + 60_000, msg: { payload: "joined" } }), collapseKey: "k1" }]);
      const leaseUntil = now + 300;
      // held and not taken, then held leased twice: the second hold is of a taken msg, which keeps nothing merged
      const twice = await h.queue.deferMany([
        { entry: entry({ id: "twice", dueAt: now + 60_000 }), leaseUntil, tag: "t" },
        { entry: entry({ id: "twice", dueAt: now + 60_000 }), leaseUntil, tag: "t" },
      ]);
      // held with a collapse key, then leased in the same batch: the key no longer names it
      const mixed = await h.queue.deferMany([
        { entry: entry({ id: "mixed", dueAt: now + 60_000 }), collapseKey: "k2" },
        { entry: entry({ id: "mixed", dueAt: now + 60_000 }), leaseUntil, tag: "t" },
      ]);
      assert.deepEqual([...twice, ...mixed], [{ id: "twice" }, { id: "twice" }, { id: "mixed" }, { id: "mixed" }]);
      assert.deepEqual(await h.queue.deferMany([{ entry: entry({ id: "own", dueAt: now + 60_000 }), collapseKey: "k2" }]), [{ id: "own" }]);
      assert.deepEqual(await other.takeTagged("t", 10, 5000), [], "both are leased");
      await sleep(Math.max(0, leaseUntil - Date.now()) + 40);
      assert.deepEqual(await other.takeDue(10, 5000), []);
      const taken = await other.takeTagged("t", 10, 5000);
      assert.deepEqual(taken.map((m) => m.id).sort(), ["mixed", "twice"]);
      assert.deepEqual(taken.find((m) => m.id === "twice")?.collapsed, undefined, "held again once taken: what was merged is gone");
      await other.ack(taken.map((m) => m.id));
      // one ack of more leased msgs than a script's command takes at once
      const many = Array.from({ length: 2_100 }, (_, i) => ({ entry: entry({ id: `a${i}`, dueAt: now + 60_000 }), leaseUntil: now + 60_000 }));
      await h.queue.deferMany(many);
      assert.equal(await h.queue.size(), 2_101);
      await h.queue.ack(many.map((m) => m.entry.id as string));
      assert.equal(await h.queue.size(), 1, "only the msg on its own is left");
    });

    it("refuses a leaseUntil that is no epoch ms, or comes with a collapseKey, naming it, and holds the rest of the batch", async () => {
      const results = await h.queue.deferMany([
        { entry: entry(), leaseUntil: Number.NaN },
        { entry: entry(), leaseUntil: Date.now() + 1000, collapseKey: "k" },
        { entry: entry() },
      ]);
      assert.match(String(results[0]), /leaseUntil must be a finite epoch ms/);
      assert.match(String(results[1]), /leased \(leaseUntil\) cannot have a collapseKey/);
      assert.ok(!(results[2] instanceof Error));
      assert.equal(await h.queue.size(), 1);
    });

    it("ack removes taken msgs for good, and leaves a msg that was not taken", async () => {
      const a = await h.queue.defer(entry());
      const bDue = Date.now() + 60_000;
      const b = await h.queue.defer(entry({ dueAt: bDue }));
      await h.queue.ack([b.id, "never-held"]);
      assert.equal(await h.queue.size(), 2, "an ack of a msg not taken removes nothing");
      const taken = await h.queue.takeDue(10, 100);
      assert.deepEqual(taken.map((m) => m.id), [a.id]);
      await h.queue.ack([a.id]);
      assert.equal(await h.queue.size(), 1);
      await sleep(150);
      assert.deepEqual(await h.queue.takeDue(10, 100), [], "an acked msg never comes back");
      assert.equal(await h.queue.nextDueAt(), bDue);
      await h.queue.ack([]);
    });

    it("counts due and leased msgs in size, and reports the next due time", async () => {
      assert.equal(await h.queue.size(), 0);
      assert.equal(await h.queue.nextDueAt(), null);
      const now = Date.now();
      await h.queue.defer(entry({ dueAt: now - 10 }));
      await h.queue.defer(entry({ dueAt: now + 50_000 }));
      await h.queue.defer(entry({ dueAt: now + 40_000 }));
      assert.equal(await h.queue.nextDueAt(), now - 10);
      await h.queue.takeDue(10, 20_000);
      assert.equal(await h.queue.size(), 3);
      const next = await h.queue.nextDueAt();
      assert.ok(next !== null && next > now + 15_000 && next <= Date.now() + 20_000, "the lease expiry comes before the next due msg");
    });

    it("collapses msgs with one key into the held msg, which keeps its dueAt; a msg after the take starts anew", async () => {
      const now = Date.now();
      const first = await h.queue.defer(entry({ id: "c1", dueAt: now - 100, msg: { n: 1 } }), "topic-a");
      assert.deepEqual(first, { id: "c1" });
      for (let n = 2; n <= 5; n++) {
        const r = await h.queue.defer(entry({ id: `c${n}`, dueAt: now - 5000, msg: { n } }), "topic-a");
        assert.deepEqual(r, { id: "c1", collapsedInto: "c1" });
      }
      assert.equal(await h.queue.size(), 1);
      assert.equal(await h.queue.nextDueAt(), now - 100, "the held msg's dueAt did not move");
      const other = await h.queue.defer(entry({ id: "d1", dueAt: now + 60_000 }), "topic-b");
      assert.equal(other.collapsedInto, undefined);
      assert.equal(await h.queue.size(), 2);

      const [taken, ...none] = await h.queue.takeDue(10, 5000);
      assert.equal(none.length, 0);
      assert.equal(taken?.id, "c1");
      assert.equal(taken?.dueAt, now - 100);
      assert.deepEqual(taken?.msg, { n: 1 });
      assert.deepEqual(taken?.collapsed, [{ n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }], "collapsed lists the 4 merged msgs, not the held one");

      const after = await h.queue.defer(entry({ id: "c6", msg: { n: 6 } }), "topic-a");
      assert.deepEqual(after, { id: "c6" }, "the taken msg no longer collects");
      const merged = await h.queue.defer(entry({ id: "c7", msg: { n: 7 }, collapsed: [{ n: 7.1 }] }), "topic-a");
      assert.deepEqual(merged, { id: "c6", collapsedInto: "c6" });
      assert.equal(await h.queue.size(), 3);
      await h.queue.ack(["c1"]);
      const next = await h.queue.takeDue(10, 5000);
      assert.deepEqual(next.map((m) => [m.id, m.collapsed]), [["c6", [{ n: 7 }, { n: 7.1 }]]], "a merged msg brings its own collapsed msgs");
    });

    it("never merges into a msg whose lease expired and came back due: it starts anew", async () => {
      await h.queue.defer(entry({ id: "l1" }), "k");
      await h.queue.takeDue(10, 100);
      await sleep(150);
      const r = await h.queue.defer(entry({ id: "l2" }), "k");
      assert.deepEqual(r, { id: "l2" });
      const taken = await h.queue.takeDue(10, 5000);
      assert.deepEqual(taken.map((m) => m.id).sort(), ["l1", "l2"]);
      assert.ok(taken.every((m) => m.collapsed === undefined));
    });

    it("keeps the msg JSON exactly: nested objects, arrays, numbers, booleans, null, unicode", async () => {
      const dueAt = Date.now() - 1;
      const sent = entry({ id: "json-ü-🚀:{x}", dueAt, expiresAt: dueAt + 1e9, msg: { ...tricky, payload: tricky }, collapsed: [{ before: tricky }] });
      await h.queue.defer(sent, "json");
      await h.queue.defer(entry({ msg: { later: tricky } }), "json");
      const [taken] = await h.queue.takeDue(1, 5000);
      const expected = JSON.parse(JSON.stringify({ ...sent, collapsed: [{ before: tricky }, { later: tricky }] })) as DeferredMsg;
      assert.deepEqual(taken, expected);
      assert.equal((taken?.msg.numbers as number[])[3], Math.PI);
      assert.deepEqual((taken?.msg.nested as { none: unknown }).none, []);
    });

    it("generates an id when none is given", async () => {
      const { id: _omit, ...rest } = entry();
      void _omit;
      const { id } = await h.queue.defer(rest);
      assert.match(id, /^[0-9a-f-]{36}$/);
      const { id: id2 } = await h.queue.defer({ ...rest, id: "" });
      assert.notEqual(id2, id);
      assert.deepEqual((await h.queue.takeDue(10, 5000)).map((m) => m.id).sort(), [id, id2].sort());
    });

    it("a msg deferred again under its id before its ack is a new deferral the ack leaves alone", async () => {
      await h.queue.defer(entry({ id: "r1", deferrals: 1 }));
      const [taken] = await h.queue.takeDue(10, 5000);
      assert.equal(taken?.id, "r1");
      // the release sent it back through the chain, and a gate deferred it again
      await h.queue.defer({ ...(taken), deferrals: 2, dueAt: Date.now() - 1 });
      await h.queue.ack(["r1"]);
      assert.equal(await h.queue.size(), 1);
      const again = await h.queue.takeDue(10, 5000);
      assert.deepEqual(again.map((m) => [m.id, m.deferrals]), [["r1", 2]]);
    });

    it("hands out a msg at its expiresAt when that comes before its dueAt", async () => {
      const now = Date.now();
      await h.queue.defer(entry({ id: "exp", dueAt: now + 60_000, expiresAt: now - 5 }));
      await h.queue.defer(entry({ id: "later", dueAt: now + 60_000, expiresAt: now + 120_000 }));
      assert.equal(await h.queue.nextDueAt(), now - 5);
      const taken = await h.queue.takeDue(10, 5000);
      assert.deepEqual(taken.map((m) => [m.id, m.dueAt, m.expiresAt]), [["exp", now + 60_000, now - 5]]);
    });

    it("holds a batch of 5,000 msgs in order in one call, and hands each out once", async () => {
      const now = Date.now();
      const items = Array.from({ length: 5000 }, (_, i) => ({ entry: entry({ id: `b${i}`, dueAt: now - 5000 + i, msg: { i } }) }));
      const results = await h.queue.deferMany(items);
      assert.deepEqual(results.map((r) => (r instanceof Error ? r.message : r.id)), items.map((it) => it.entry.id));
      assert.equal(await h.queue.size(), 5000);
      const first = await h.queue.takeDue(3, 5000);
      assert.deepEqual(first.map((m) => m.id), ["b0", "b1", "b2"], "earliest first");
      await h.queue.ack(first.map((m) => m.id));
      const rest = await drain(h.queue, 500);
      assert.equal(rest.length, 4997);
      assert.equal(new Set(rest).size, 4997);
      assert.equal(await h.queue.size(), 0);
    });

    it("collapses within one batch, and answers a bad item with its own Error without failing the others", async () => {
      const now = Date.now();
      const results = await h.queue.deferMany([
        { entry: entry({ id: "k1", dueAt: now - 10, msg: { n: 1 } }), collapseKey: "k" },
        { entry: entry({ id: "bad", dueAt: Number.NaN }) },
        { entry: entry({ id: "k2", msg: { n: 2 } }), collapseKey: "k" },
        { entry: { ...entry({ id: "wrong-gate" }), gate: "another-gate" } },
        { entry: entry({ id: "k3", msg: { n: 3 } }), collapseKey: "k" },
        { entry: entry({ id: "alone", dueAt: now - 5 }) },
      ]);
      assert.deepEqual(results.slice(0, 1), [{ id: "k1" }]);
      assert.ok(results[1] instanceof TypeError && /dueAt/.test(results[1].message), String(results[1]));
      assert.deepEqual(results[2], { id: "k1", collapsedInto: "k1" });
      assert.ok(results[3] instanceof TypeError && /gate/.test(results[3].message), String(results[3]));
      assert.deepEqual(results.slice(4), [{ id: "k1", collapsedInto: "k1" }, { id: "alone" }]);
      const taken = await h.queue.takeDue(10, 5000);
      assert.deepEqual(taken.map((m) => [m.id, m.collapsed]), [["k1", [{ n: 2 }, { n: 3 }]], ["alone", undefined]]);
    });

    it("answers a msg JSON cannot hold (circular, BigInt) with a SendFieldError naming msg, beside the others held", async () => {
      const loop: Record<string, unknown> = { n: 1 };
      loop.self = loop;
      const results = await h.queue.deferMany([
        { entry: entry({ id: "loop", msg: loop }) },
        { entry: entry({ id: "fine", dueAt: Date.now() - 5, msg: { n: 2 } }) },
        { entry: entry({ id: "big", msg: { n: 10n } }) },
      ]);
      for (const i of [0, 2]) {
        const answer = results[i];
        assert.ok(answer instanceof SendFieldError && answer.field === "msg" && /cannot be held in the defer queue/.test(answer.message), String(answer));
      }
      assert.deepEqual(results[1], { id: "fine" });
      assert.deepEqual((await h.queue.takeDue(10, 5000)).map((m) => m.id), ["fine"]);
    });

    it(`keeps the newest ${MAX_MERGED} merged msgs and counts the rest`, async function () {
      this.timeout(30_000);
      const now = Date.now();
      await h.queue.defer(entry({ id: "t", dueAt: now - 1, msg: { n: 0 } }), "busy");
      const merges = Array.from({ length: MAX_MERGED + 50 }, (_, i) => ({ entry: entry({ id: `m${i + 1}`, msg: { n: i + 1 } }), collapseKey: "busy" }));
      // singly, then a batch: the bound holds either way
      for (const item of merges.slice(0, 20)) await h.queue.defer(item.entry, item.collapseKey);
      await h.queue.deferMany(merges.slice(20));
      const [taken] = await h.queue.takeDue(1, 5000);
      assert.equal(taken?.collapsed?.length, MAX_MERGED);
      assert.deepEqual(taken?.collapsed?.[0], { n: 51 }, "the oldest were dropped");
      assert.deepEqual(taken?.collapsed?.at(-1), { n: MAX_MERGED + 50 });
      assert.equal(taken?.collapsedDropped, 50);
    });

    it("merges thousands of large msgs into one held msg in linear time", async function () {
      this.timeout(30_000);
      const big = "x".repeat(2048);
      await h.queue.defer(entry({ id: "hot", dueAt: Date.now() - 1 }), "hot");
      const started = Date.now();
      for (let from = 0; from < 3000; from += 500) {
        await Promise.all(Array.from({ length: 500 }, (_, i) => h.queue.defer(entry({ id: `h${from + i}`, msg: { big, i: from + i } }), "hot")));
      }
      const ms = Date.now() - started;
      const [taken] = await h.queue.takeDue(1, 5000);
      assert.equal(taken?.collapsed?.length, MAX_MERGED);
      assert.equal(taken?.collapsedDropped, 3000 - MAX_MERGED);
      assert.ok(ms < 10_000, `3,000 merges of 2 KB took ${ms} ms`);
    });

    it("merges a retried entry once, and a retried hold of the held msg keeps what was merged into it", async () => {
      const now = Date.now();
      await h.queue.defer(entry({ id: "h", dueAt: now - 1, msg: { v: 1 } }), "r");
      const merged = entry({ id: "x", msg: { n: "x" } });
      assert.deepEqual(await h.queue.defer(merged, "r"), { id: "h", collapsedInto: "h" });
      assert.deepEqual(await h.queue.defer(merged, "r"), { id: "h", collapsedInto: "h" });
      await h.queue.deferMany([{ entry: merged, collapseKey: "r" }, { entry: entry({ id: "y", msg: { n: "y" } }), collapseKey: "r" }]);
      // the held msg itself retried: its new copy replaces it, merged msgs stay
      await h.queue.defer(entry({ id: "h", dueAt: now - 1, msg: { v: 2 } }), "r");
      assert.equal(await h.queue.size(), 1);
      const [taken] = await h.queue.takeDue(10, 5000);
      assert.deepEqual(taken?.msg, { v: 2 });
      assert.deepEqual(taken?.collapsed, [{ n: "x" }, { n: "y" }]);
    });

    it("drops held msgs past their expiresAt or deadline (a gate that runs nowhere), never a taken one", async () => {
      const now = Date.now();
      await h.queue.defer(entry({ id: "gone-exp", dueAt: now + 60_000, expiresAt: now - 5, msg: { messageId: "e" } }));
      await h.queue.defer(entry({ id: "gone-deadline", dueAt: now + 60_000, deadline: now - 5 }), "dk");
      await h.queue.defer(entry({ id: "merged-in", deadline: now - 2, msg: { n: 1 } }), "dk");
      await h.queue.defer(entry({ id: "stays", dueAt: now + 60_000, deadline: now + 60_000 }));
      await h.queue.defer(entry({ id: "forever", dueAt: now + 60_000 }));
      await h.queue.defer(entry({ id: "taken", dueAt: now - 10, expiresAt: now - 1 }));
      assert.deepEqual((await h.queue.takeDue(1, 5000)).map((m) => m.id), ["taken"]);
      const dropped = await h.queue.dropExpired(100);
      assert.deepEqual(dropped.map((m) => [m.id, m.collapsed]).sort(), [["gone-deadline", [{ n: 1 }]], ["gone-exp", undefined]]);
      assert.deepEqual(await h.queue.dropExpired(100), []);
      assert.equal(await h.queue.size(), 3);
      const next = await h.queue.defer(entry({ id: "new", dueAt: now - 1 }), "dk");
      assert.deepEqual(next, { id: "new" }, "the dropped msg's collapse key is free");
      await assert.rejects(h.queue.dropExpired(0), RangeError);
    });

    it("keeps a collapsed group while a msg merged into it may still go out: dropped once the last of them is past its time", async () => {
      const now = Date.now();
      await h.queue.defer(entry({ id: "head", dueAt: now + 60_000, expiresAt: now - 5 }), "k1");
      await h.queue.defer(entry({ id: "later", deadline: now + 60_000, msg: { n: "later" } }), "k1");
      await h.queue.defer(entry({ id: "head2", dueAt: now + 60_000, deadline: now - 5 }), "k2");
      await h.queue.defer(entry({ id: "no-limit", msg: { n: "no-limit" } }), "k2");
      await h.queue.defer(entry({ id: "head3", dueAt: now + 60_000, deadline: now + 60_000 }), "k3");
      await h.queue.defer(entry({ id: "earlier", deadline: now - 5, msg: { n: "earlier" } }), "k3");
      assert.deepEqual(await h.queue.dropExpired(100), [], "each group has a msg that may still go out");
      assert.equal(await h.queue.size(), 3);
    });

    it("stores what the codec makes of a msg, and hands it back decoded", async () => {
      const h2 = await open({ encrypt: true });
      try {
        const { id } = await h2.queue.defer(entry({ msg: { recipient: "secret@example.com" } }), "ck");
        await h2.queue.defer(entry({ msg: { recipient: "merged@example.com" } }), "ck");
        const raw = await h2.raw();
        assert.ok(raw.length > 0);
        assert.ok(!raw.some((v) => v.includes("@example.com")), "no address is stored in the clear");
        const [taken] = await h2.queue.takeDue(1, 5000);
        assert.equal(taken?.id, id);
        assert.deepEqual([taken?.msg, taken?.collapsed], [{ recipient: "secret@example.com" }, [{ recipient: "merged@example.com" }]]);
      } finally {
        await h2.done();
      }
    });

    it("acks idempotently: a retried ack removes nothing more", async () => {
      await h.queue.defer(entry({ id: "a1" }));
      const [taken] = await h.queue.takeDue(1, 5000);
      await h.queue.ack([taken?.id]);
      await h.queue.ack([taken?.id]);
      assert.equal(await h.queue.size(), 0);
    });

    it("scan reads every held msg, due and leased, as stored (decoded), without taking any; past its bound it says so", async () => {
      const h2 = await open({ encrypt: true });
      try {
        const later = Date.now() + 60_000;
        const ids = Array.from({ length: 1_500 }, (_, i) => `s${i}`);
        await h2.queue.deferMany(ids.map((id, i) => ({ entry: entry({ id, dueAt: i < 5 ? Date.now() - 1000 : later + i, meta: { org: "o", recipientKey: `r${i % 7}` } }) })));
        const taken = await h2.queue.takeDue(5, 120_000);
        assert.equal(taken.length, 5, "5 leased, past the first held due");
        const whole = await h2.queue.scan(10_000);
        assert.deepEqual([whole.scanned, whole.complete, whole.msgs.length], [1_500, true, 1_500]);
        assert.deepEqual(whole.msgs.map((m) => m.id).sort(), [...ids].sort());
        const s7 = whole.msgs.find((m) => m.id === "s7");
        assert.deepEqual([s7?.dueAt, s7?.meta, s7?.gate, s7?.deferrals], [later + 7, { org: "o", recipientKey: "r0" }, GATE, 1]);
        // at exactly the bound it is whole; one short, cut
        assert.equal((await h2.queue.scan(1_500)).complete, true);
        const cut = await h2.queue.scan(1_000);
        assert.deepEqual([cut.scanned, cut.complete, new Set(cut.msgs.map((m) => m.id)).size], [1_000, false, 1_000]);
        // nothing was taken or moved
        assert.equal(await h2.queue.size(), 1_500);
        assert.equal(await h2.queue.nextDueAt(), later + 5);
        assert.deepEqual(await h2.queue.takeDue(10, 30_000), []);
        await assert.rejects(h2.queue.scan(0), RangeError);
      } finally {
        await h2.done();
      }
    });

    it("refuses a bad limit, lease or dueAt", async () => {
      await assert.rejects(h.queue.takeDue(0, 1000), RangeError);
      await assert.rejects(h.queue.takeDue(5, 0), RangeError);
      await assert.rejects(h.queue.defer(entry({ dueAt: Number.NaN })), TypeError);
    });
  });
}

const codecOf = (options?: HarnessOptions) => deferCodec(options?.encrypt ? "test-secret" : undefined, options?.encrypt === true);

deferQueueConformance("memory", async (options) => {
  const stored: string[] = [];
  const queue = new MemoryDeferQueue({ gate: GATE, codec: codecOf(options), onChanges: (changes) => stored.push(...changes.map((c) => JSON.stringify(c))) });
  return { queue, otherInstance: async () => queue, raw: async () => stored, done: () => queue.close() };
});

/** Every key, field, member and value under a prefix. */
async function everything(client: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = "0";
  do {
    const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      out.push(key);
      const type = await client.type(key);
      if (type === "hash") out.push(...Object.entries(await client.hgetall(key)).flat());
      else if (type === "zset") out.push(...await client.zrange(key, 0, -1));
      else if (type === "list") out.push(...await client.lrange(key, 0, -1));
      else if (type === "set") out.push(...await client.smembers(key));
    }
  } while (cursor !== "0");
  return out;
}

deferQueueConformance("redis", async (options) => {
  const prefix = uniquePrefix("dq");
  const scope = { keyPrefix: prefix, configId: "cfg-1", gate: GATE };
  const clients: Redis[] = [redisClient()];
  const first = clients[0];
  return {
    queue: new RedisDeferQueue(first, scope, { codec: codecOf(options) }),
    otherInstance: async () => {
      const client = redisClient();
      clients.push(client);
      return new RedisDeferQueue(client, scope, { codec: codecOf(options) });
    },
    raw: () => everything(first, prefix),
    done: async () => {
      await dropPrefix(first, prefix);
      await Promise.all(clients.map((c) => c.quit()));
    },
  };
});
describe("on a Redis Cluster of three masters", function () {
  // one cluster for the whole conformance suite; each test's prefix (its own hash tag) lands on some master, and the
  // suite fails unless its queues reached every master
  const store = new SuiteStore("redis-cluster");
  store.hooks();
  const seeds = () => (store.cluster?.nodes ?? []).map((n) => ({ host: "127.0.0.1", port: n.port }));
  let queues = 0;
  deferQueueConformance("redis-cluster", async (options) => {
    // each test's queue on the next master in turn: the suite reaches every master by construction
    const prefix = prefixOnMaster("dqc", queues++, deferHashTag);
    const scope = { keyPrefix: prefix, configId: "cfg-1", gate: GATE };
    const clients: Cluster[] = [new Cluster(seeds())];
    const first = clients[0];
    return {
      queue: new RedisDeferQueue(first, scope, { codec: codecOf(options) }),
      otherInstance: async () => {
        const client = new Cluster(seeds());
        clients.push(client);
        return new RedisDeferQueue(client, scope, { codec: codecOf(options) });
      },
      raw: async () => {
        const out: string[] = [];
        for (const node of first.nodes("master")) out.push(...await everything(node, prefix));
        return out;
      },
      done: async () => {
        await store.drop(prefix);
        await Promise.all(clients.map((c) => c.quit()));
      },
    };
  });
});

describe("memory defer queue", function () {
  it("uses its clock: nothing at dueAt - 1 ms, the msg at dueAt; a lease ends on the clock too", async () => {
    let now = 1_000_000;
    const queue = new MemoryDeferQueue({ clock: () => now });
    await queue.defer(entry({ id: "t", dueAt: 1_000_500 }));
    now = 1_000_499;
    assert.deepEqual(await queue.takeDue(5, 100), []);
    now = 1_000_500;
    assert.deepEqual((await queue.takeDue(5, 100)).map((m) => m.id), ["t"]);
    now = 1_000_599;
    assert.deepEqual(await queue.takeDue(5, 100), []);
    now = 1_000_600;
    assert.deepEqual((await queue.takeDue(5, 100)).map((m) => m.id), ["t"]);
  });

  it("keeps leases in expiry order: of 20,000 leased msgs, acked or re-leased, a take finds exactly the expired ones", async () => {
    let now = 2_000_000;
    const queue = new MemoryDeferQueue({ clock: () => now });
    const items = Array.from({ length: 20_000 }, (_, i) => ({ entry: entry({ id: `l${i}`, dueAt: now + i }), leaseUntil: now + 10_000 + i }));
    await queue.deferMany(items);
    // most leave and are acked; some are held again under a later lease (their first lease entry is stale now)
    await queue.ack(items.filter((_, i) => i % 10 !== 0 && i % 10 !== 1).map((it) => it.entry.id as string));
    await queue.deferMany(items.filter((_, i) => i % 10 === 1).map((it) => ({ ...it, leaseUntil: now + 50_000 })));
    assert.equal(await queue.size(), 4_000);
    assert.equal(await queue.nextDueAt(), now + 10_000, "the earliest live lease: l0's");
    now += 10_000 + 99;
    assert.deepEqual((await queue.takeDue(100, 1_000)).map((m) => m.id), ["l0", "l10", "l20", "l30", "l40", "l50", "l60", "l70", "l80", "l90"]);
    now = 2_000_000 + 49_999;
    const back = await queue.takeDue(5_000, 1_000);
    assert.equal(back.length, 2_000, "the expired leases (the ten taken above included), not the later ones, each once");
    assert.deepEqual([...new Set(back.map((m) => Number(m.id.slice(1)) % 10))], [0]);
    assert.equal(new Set(back.map((m) => m.id)).size, 2_000);
    now += 1;
    assert.equal((await queue.takeDue(5_000, 1_000)).length, 2_000, "then the re-leased ones");
  });
});

describe("memory defer store: the journal is always what is still owed", function () {
  let dir: string;
  let file: string;
  const warnings: string[] = [];
  const open = (clock: () => number, extra: Partial<ConstructorParameters<typeof MemoryDeferStore>[0]> = {}) =>
    new MemoryDeferStore({ file, clock, warn: (t) => warnings.push(t), ...extra });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "sgjournal-"));
    file = join(dir, "nested", "memory-defer-cfg.jsonl");
    warnings.length = 0;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("rebuilds, after a crash (no close), every held and merged msg; a taken msg is due again; released and dropped ones stay gone", async () => {
    const now = 5_000_000;
    const first = open(() => now);
    const a = first.queue("gate-a");
    const b = first.queue("gate-b");
    await a.defer({ ...entry({ id: "held", dueAt: now - 10, msg: { tricky } }), gate: "gate-a" }, "k");
    await a.defer({ ...entry({ id: "merged-1", msg: { n: 1 } }), gate: "gate-a" }, "k");
    await a.defer({ ...entry({ id: "future", dueAt: now + 60_000, expiresAt: now + 90_000, msg: { n: 2 } }), gate: "gate-a" });
    await a.defer({ ...entry({ id: "released", dueAt: now - 30 }), gate: "gate-a" });
    await a.defer({ ...entry({ id: "taken", dueAt: now - 20, msg: { n: 3 } }), gate: "gate-a" }, "k2");
    await b.deferMany(Array.from({ length: 2000 }, (_, i) => ({ entry: { ...entry({ id: `b${i}`, dueAt: now + i }), gate: "gate-b" } })));
    await b.defer({ ...entry({ id: "expired", dueAt: now + 60_000, deadline: now - 1 }), gate: "gate-b" });
    assert.deepEqual((await a.takeDue(1, 60_000)).map((m) => m.id), ["released"]);
    await a.ack(["released"]);
    assert.deepEqual((await a.takeDue(1, 60_000)).map((m) => m.id), ["taken"]);
    assert.equal((await b.dropExpired(10)).length, 1);
    // the process dies here: no close, no compaction

    const second = open(() => now);
    const a2 = second.queue("gate-a");
    assert.deepEqual(second.gates().sort(), ["gate-a", "gate-b"]);
    assert.equal(await a2.size(), 3);
    assert.equal(await second.queue("gate-b").size(), 2000);
    assert.equal(await a2.nextDueAt(), now - 20, "the msg taken and never acked is due again");
    assert.deepEqual(await a2.defer({ ...entry({ id: "merged-2", msg: { n: 4 } }), gate: "gate-a" }, "k"), { id: "held", collapsedInto: "held" });
    const taken = await a2.takeDue(10, 1000);
    assert.deepEqual(taken.map((m) => m.id), ["taken", "held"]);
    assert.deepEqual(taken[1]?.msg, JSON.parse(JSON.stringify({ tricky })));
    assert.deepEqual(taken[1]?.collapsed, [{ n: 1 }, { n: 4 }]);
    await a2.ack(taken.map((m) => m.id));
    second.close();

    const third = open(() => now + 60_000);
    const a3 = third.queue("gate-a");
    assert.deepEqual((await a3.takeDue(10, 1000)).map((m) => [m.id, m.expiresAt]), [["future", 5_090_000]]);
    assert.equal(readFileSync(file, "utf8").split("\n").filter((l) => l !== "").length, 1 + 1 + 2000, "compacted: a header and one line per held msg");
    assert.deepEqual(warnings, []);
    third.close();
  });

  it("after a crash, a msg its gate held leased (pacing it itself) is due again at once, not after the lease", async () => {
    const now = 7_000_000;
    const first = open(() => now);
    await first.queue(GATE).deferMany([{ entry: entry({ id: "paced", dueAt: now + 40 }), leaseUntil: now + 30_040, tag: "t" }]);
    assert.deepEqual(await first.queue(GATE).takeDue(10, 1000), []);
    // the process dies here
    const second = open(() => now + 50);
    assert.deepEqual((await second.queue(GATE).takeDue(10, 1000)).map((m) => m.id), ["paced"]);
    assert.deepEqual(warnings, []);
    second.close();
  });

  it("skips a last line cut short by a crash mid-write, and names any other damaged line", async () => {
    const first = open(Date.now);
    await first.queue(GATE).defer(entry({ id: "whole" }));
    appendFileSync(file, '{"g":"gate-1","op":"put","id":"torn","stor');
    const second = open(Date.now);
    assert.deepEqual((await second.queue(GATE).takeDue(10, 1000)).map((m) => m.id), ["whole"]);
    assert.deepEqual(warnings, []);
    second.close();
    writeFileSync(file, `${readFileSync(file, "utf8")}not json\n{"g":"gate-1","op":"remove","ids":["whole"]}\n`);
    const third = open(Date.now);
    assert.equal(await third.queue(GATE).size(), 0, "the lines after a damaged one still count");
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? "", /damaged line/);
    third.close();
  });

  /** Holds `n` msgs due later (about 200 bytes of journal each) in one call, which crosses a small compaction threshold. */
  async function fill(queue: MemoryDeferQueue, n: number, now: number): Promise<void> {
    // one of the last is a merge target: its line is written in a later part than the first
    await queue.deferMany(Array.from({ length: n }, (_, i) => ({
      entry: entry({ id: `h${i}`, dueAt: now + 60_000 + i, msg: { payload: "x".repeat(100), i } }), ...(i === n - 10 ? { collapseKey: "late-k" } : {}),
    })));
  }
  const compacting = (): boolean => existsSync(`${file}.parts.tmp`);
  /** a journal of 2 × COMPACT_SLICE such msgs (~250 B a line) is past it */
  const COMPACT_AFTER_BYTES = 200 * COMPACT_SLICE;
  const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  it("compacts while the queues run, a part at a time: what was held, and what changed meanwhile (held, merged, released), is rebuilt from the file", async () => {
    const now = Date.now();
    const first = open(() => now, { compactAfterBytes: COMPACT_AFTER_BYTES });
    const queue = first.queue(GATE);
    await queue.defer(entry({ id: "head", dueAt: now - 5, msg: { n: 0 } }), "k");
    await queue.defer(entry({ id: "gone", dueAt: now - 10 }));
    await fill(queue, 5 * COMPACT_SLICE, now);
    await turn();
    assert.ok(compacting(), "crossing the threshold began a compaction, on the next turn");
    // calls made while it runs, each in a turn of its own
    let turns = 0;
    const changes = [
      // before the compaction reaches its line (the fifth part)
      () => queue.defer(entry({ id: "merged-late", msg: { n: 3 } }), "late-k"),
      () => queue.defer(entry({ id: "late", dueAt: now + 1, msg: { n: 1 } })),
      () => queue.defer(entry({ id: "merged", msg: { n: 2 } }), "k"),
      async () => queue.ack((await queue.takeDue(1, 1000)).map((m) => m.id)),
      () => queue.defer(entry({ id: "h1", dueAt: now + 2, msg: { replaced: true } })),
    ];
    while (compacting()) {
      await changes[turns]?.();
      await turn();
      turns++;
    }
    assert.ok(turns >= 5, `the compaction of ${5 * COMPACT_SLICE} msgs took ${turns} turns of the loop (a part of ${COMPACT_SLICE} per turn)`);
    assert.ok(turns > changes.length, "every change came while it ran");
    const lines = readFileSync(file, "utf8").split("\n").filter((l) => l !== "");
    assert.ok(lines.length < 1 + 5 * COMPACT_SLICE + 1 + changes.length + 2, `${lines.length} lines: the state, then the changes made meanwhile`);
    // after it: the new file takes the changes
    await queue.defer(entry({ id: "after", dueAt: now + 3, msg: { n: 5 } }));
    await queue.defer(entry({ id: "after-gone", dueAt: now - 20 }));
    assert.deepEqual(await queue.ack((await queue.takeDue(1, 1000)).map((m) => m.id)).then(() => queue.size()), 1 + 5 * COMPACT_SLICE + 2);
    // the process dies here: no close
    const second = open(() => now + 30_000);
    const again = second.queue(GATE);
    assert.equal(await again.size(), 1 + 5 * COMPACT_SLICE + 2, "head, the 5,000, late, after; gone and after-gone released (h1 replaced, not added)");
    const due = await again.takeDue(10, 1000);
    assert.deepEqual(due.map((m) => [m.id, m.msg, m.collapsed]), [
      ["head", { n: 0 }, [{ n: 2 }]], ["late", { n: 1 }, undefined], ["h1", { replaced: true }, undefined], ["after", { n: 5 }, undefined],
    ]);
    const target = again.state().find((line) => line.op === "state" && line.id === `h${5 * COMPACT_SLICE - 10}`);
    assert.deepEqual(target?.op === "state" ? target.merged.map((m) => JSON.parse(m) as unknown) : undefined, [{ n: 3 }], "merged once, though its line was written after the merge");
    assert.deepEqual(warnings, []);
    second.close();
  });

  it("lists what is held a part per turn: msgs released, replaced or merged into before their part is made, and msgs held after it began, are rebuilt as they stand", async () => {
    const now = Date.now();
    const first = open(() => now, { compactAfterBytes: COMPACT_AFTER_BYTES });
    const queue = first.queue(GATE);
    const n = 5 * COMPACT_SLICE;
    // the last ten are due: the first changes below take them, long before the compaction lists their part
    await queue.deferMany(Array.from({ length: n }, (_, i) => ({
      entry: entry({ id: `h${i}`, dueAt: i >= n - 10 ? now - 1 : now + 60_000 + i, msg: { payload: "x".repeat(100), i } }), ...(i === n - 20 ? { collapseKey: "end-k" } : {}),
    })));
    await turn();
    assert.ok(compacting(), "crossing the threshold began a compaction, on the next turn");
    await queue.ack((await queue.takeDue(5, 1000)).map((m) => m.id));
    await queue.defer(entry({ id: `h${n - 30}`, dueAt: now + 5, msg: { replaced: true } }));
    await queue.defer(entry({ id: "merged", msg: { n: 1 } }), "end-k");
    await queue.defer(entry({ id: "fresh", dueAt: now + 7, msg: { n: 2 } }), "fresh-k");
    await queue.defer(entry({ id: "into-fresh", msg: { n: 3 } }), "fresh-k");
    assert.ok(compacting(), "every change came before the last part was listed");
    let turns = 0;
    while (compacting()) {
      await turn();
      turns++;
    }
    assert.ok(turns >= 3, `the compaction went on for ${turns} more turns`);
    // listed as they stood when their part was made: the replaced msg's line holds its new text (a list made at the start would hold the old)
    const written = readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { op?: string; id?: string; stored?: string });
    const replaced = written.find((line) => line.op === "state" && line.id === `h${n - 30}`);
    assert.ok(replaced?.stored?.includes("replaced"), "the line of a msg replaced before its part was made is what it holds now");
    const lines = (q: MemoryDeferQueue): string[] => q.state().map((line) => JSON.stringify(line)).sort();
    const held = lines(queue);
    assert.equal(held.length, n - 5 + 1, "five released, one held after it began; the two merged are in their groups");
    // the process dies here: the file alone rebuilds every held msg as it stands
    const second = open(() => now);
    assert.deepEqual(lines(second.queue(GATE)), held);
    assert.deepEqual(warnings, []);
    second.close();
    first.close();
  });

  it("keeps a hand-back of 150,000 msgs made in one call while it compacts (its lines follow the compaction's)", async function () {
    this.timeout(60_000);
    const now = Date.now();
    const first = open(() => now, { compactAfterBytes: COMPACT_AFTER_BYTES });
    await fill(first.queue(GATE), 2 * COMPACT_SLICE, now);
    await turn();
    assert.ok(compacting());
    const many = 150_000;
    await first.queue(GATE).deferMany(Array.from({ length: many }, (_, i) => ({ entry: entry({ id: `back${i}`, dueAt: now + 1_000 + i, msg: { i } }) })));
    while (compacting()) await turn();
    // the process dies here
    const second = open(() => now);
    assert.equal(await second.queue(GATE).size(), 2 * COMPACT_SLICE + many);
    assert.deepEqual(warnings, []);
    second.close();
    first.close();
  });

  it("a close while it compacts in parts leaves one whole journal, with every msg, and no temporary file", async () => {
    const now = Date.now();
    const first = open(() => now, { compactAfterBytes: COMPACT_AFTER_BYTES });
    await fill(first.queue(GATE), 5 * COMPACT_SLICE, now);
    await turn();
    assert.ok(compacting());
    await first.queue(GATE).defer(entry({ id: "during", dueAt: now - 1 }));
    first.close();
    assert.equal(compacting(), false);
    await turn();
    await turn();
    assert.equal(existsSync(`${file}.parts.tmp`), false, "the abandoned compaction wrote nothing after the close");
    const second = open(() => now);
    assert.equal(await second.queue(GATE).size(), 5 * COMPACT_SLICE + 1);
    assert.deepEqual(warnings, []);
    second.close();
  });

  it("a close after the last part, as the new file is put on disk, leaves one whole journal and warns of nothing", async () => {
    const now = Date.now();
    const first = open(() => now, { compactAfterBytes: COMPACT_AFTER_BYTES });
    // the close comes where the compaction hands the new file to the thread pool to sync: the one wait between its parts and its end
    let settled = 0;
    await watchingRewrites((rewrite) => {
      const settle = rewrite.settle.bind(rewrite);
      rewrite.settle = () => {
        settled++;
        first.close();
        return settle();
      };
    }, async () => {
      await fill(first.queue(GATE), 2 * COMPACT_SLICE, now);
      while (settled === 0) await turn();
      await turn();
    });
    assert.equal(existsSync(`${file}.parts.tmp`), false);
    assert.deepEqual(warnings, [], "closed while it synced: the close compacts, and the sync that failed on its closed file is no fault");
    const second = open(() => now);
    assert.equal(await second.queue(GATE).size(), 2 * COMPACT_SLICE);
    second.close();
  });

  it("ends a part of a compaction once its lines reach COMPACT_PART_BYTES: large msgs make parts of a few each", async () => {
    const now = Date.now();
    const first = open(() => now, { compactAfterBytes: COMPACT_AFTER_BYTES });
    const parts: { lines: number; bytes: number }[] = [];
    const large = 100;
    await watchingRewrites((rewrite) => {
      const add = rewrite.add.bind(rewrite);
      const flush = rewrite.flush.bind(rewrite);
      let lines = 0;
      rewrite.add = (line) => {
        lines++;
        add(line);
      };
      rewrite.flush = () => {
        parts.push({ lines, bytes: rewrite.pending });
        lines = 0;
        return flush();
      };
    }, async () => {
      // 20 KB each: a part of COMPACT_SLICE of them would be 5 MB written in one turn
      await first.queue(GATE).deferMany(Array.from({ length: large }, (_, i) => ({ entry: entry({ id: `big${i}`, dueAt: now + 60_000, msg: { payload: "x".repeat(20_000), i } }) })));
      while (compacting() || parts.length === 0) await turn();
    });
    assert.equal(parts.reduce((sum, p) => sum + p.lines, 0), large);
    assert.ok(parts.length >= large / 4, `${parts.length} parts for ${large} msgs of 20 KB`);
    // a part ends with the line that reaches the bound: at most one line past it
    for (const p of parts) assert.ok(p.bytes < COMPACT_PART_BYTES + 21_000, `a part of ${p.lines} msgs, ${p.bytes} bytes`);
    const second = open(() => now);
    assert.equal(await second.queue(GATE).size(), large);
    first.close();
    second.close();
  });

  it("a close while a part is being written closes the part's handle only after that write: the next deployment's journal gets none of its lines", async () => {
    const now = Date.now();
    const first = open(() => now, { compactAfterBytes: COMPACT_AFTER_BYTES });
    // the close comes right after a part is handed to the thread pool, kept busy so that the write waits there; the next
    // deployment's store opens the journal at once, and would get the number of a handle closed under the write
    let flushed = 0;
    let busy: Promise<unknown>[] = [];
    let second: MemoryDeferStore | undefined;
    await watchingRewrites((rewrite) => {
      const flush = rewrite.flush.bind(rewrite);
      rewrite.flush = () => {
        if (++flushed !== 2) return flush();
        busy = Array.from({ length: threadPoolSize() }, () => promisify(pbkdf2)("k", "s", 100_000, 32, "sha256"));
        const written = flush();
        first.close();
        second = open(() => now);
        return written;
      };
    }, async () => {
      await fill(first.queue(GATE), 2 * COMPACT_SLICE, now);
      while (second === undefined) await turn();
      await Promise.all(busy);
      await new Promise((resolve) => setTimeout(resolve, 50));
    });
    assert.equal(existsSync(`${file}.parts.tmp`), false);
    // the header and one state line per held msg: a part written through the new store's handle would add its lines again
    const lines = readFileSync(file, "utf8").split("\n").filter((line) => line !== "");
    assert.equal(lines.length, 1 + 2 * COMPACT_SLICE, `${lines.length} lines in the journal`);
    assert.deepEqual(warnings, []);
    assert.ok(second, "the next deployment's store was opened mid-write");
    assert.equal(await second.queue(GATE).size(), 2 * COMPACT_SLICE);
    second.close();
  });

  it("adopts the held msgs of version 0.1's queue file once, then removes the file", async () => {
    const legacyFile = join(dir, "memory-defer-cfg.json");
    const now = Date.now();
    writeFileSync(legacyFile, JSON.stringify({
      version: 1,
      entries: [
        { entry: { ...entry({ id: "old-1", dueAt: now - 1 }), msg: { n: 1 } }, merged: [{ n: 2 }], collapseKey: "[\"g\",\"o\",\"r\",\"t\"]" },
        { entry: { ...entry({ id: "old-2", dueAt: now + 60_000 }), gate: "other-gate" }, merged: [] },
      ],
    }));
    const store = open(Date.now, { adopt: legacyMemoryQueue(legacyFile, () => undefined) as Adoption });
    assert.equal(existsSync(legacyFile), false);
    assert.deepEqual((await store.queue(GATE).takeDue(10, 1000)).map((m) => [m.id, m.msg, m.collapsed]), [["old-1", { n: 1 }, [{ n: 2 }]]]);
    assert.equal(await store.queue("other-gate").size(), 1);
    store.close();
    const again = open(Date.now, { ...(existsSync(legacyFile) ? { adopt: legacyMemoryQueue(legacyFile, () => undefined) as Adoption } : {}) });
    assert.equal(await again.queue("other-gate").size(), 1, "kept in the journal, not imported twice");
    again.close();
  });
});

describe("redis defer queue", function () {
  let prefix: string;
  let admin: Redis;
  const scope = (gate = GATE, configId = "cfg-1") => ({ keyPrefix: prefix, configId, gate });
  beforeEach(() => {
    prefix = uniquePrefix("dqr");
    admin = redisClient();
  });
  afterEach(async () => {
    await dropPrefix(admin, prefix);
    await admin.quit();
  });

  async function keysUnder(match: string): Promise<string[]> {
    const keys: string[] = [];
    let cursor = "0";
    do {
      const [next, found] = await admin.scan(cursor, "MATCH", match, "COUNT", 1000);
      cursor = next;
      keys.push(...found);
    } while (cursor !== "0");
    return keys;
  }

  it("keeps a gate's keys under the prefix, its cap-config and its gate, in one hash tag naming the prefix", async () => {
    const queue = new RedisDeferQueue(admin, scope(GATE, "cfg:1|x"));
    await queue.defer(entry({ id: "a", deadline: Date.now() + 60_000 }), "ck");
    await queue.defer(entry({ id: "b", deadline: Date.now() + 120_000 }), "ck");
    await queue.defer(entry({ id: "c", dueAt: Date.now() + 60_000 }), "ck2");
    await queue.takeDue(1, 60_000);
    const keys = await keysUnder(`${prefix}:*`);
    const base = `${prefix}:{${prefix}:dq}:q:cfg%3a1%7cx:${GATE}`;
    assert.deepEqual(keys.map((k) => k.slice(base.length + 1)).sort(), ["at", "ck", "collapse", "due", "exp", "lease", "m:a", "msg", "u:a"].sort());
    for (const key of keys) assert.ok(key.startsWith(`${base}:`), key);
    assert.throws(() => new RedisDeferQueue(admin, { ...scope(), keyPrefix: "bad{prefix}" }));
  });

  it("keeps two cap-configs and two gates on one prefix apart: each queue hands out only its own msgs", async () => {
    const queues = [scope("g1", "cfgA"), scope("g2", "cfgA"), scope("g1", "cfgB")].map((s) => new RedisDeferQueue(admin, s));
    await Promise.all(queues.map((q, i) => q.deferMany(Array.from({ length: 300 }, (_, n) => ({ entry: { ...entry({ id: `q${i}-${n}` }), gate: q.scope.gate } })))));
    for (const [i, q] of queues.entries()) {
      const ids = await drain(q, 100);
      assert.equal(ids.length, 300);
      assert.ok(ids.every((id) => id.startsWith(`q${i}-`)), `queue ${i} handed out another queue's msg`);
    }
  });

  it("a restarted instance (new client, new queue, same scope) takes what the old one deferred, and its dead leases", async () => {
    const oldClient = redisClient();
    const old = new RedisDeferQueue(oldClient, scope());
    await old.defer(entry({ id: "due", msg: { tricky } }));
    await old.defer(entry({ id: "soon", dueAt: Date.now() + 250 }), "k");
    await old.defer(entry({ id: "merged", msg: { n: 9 } }), "k");
    await old.defer(entry({ id: "taken", dueAt: Date.now() - 5000 }));
    // the old instance takes one and dies holding it
    assert.deepEqual((await old.takeDue(1, 1000)).map((m) => m.id), ["taken"]);
    await old.close();
    await oldClient.quit();

    const freshClient = redisClient();
    const fresh = new RedisDeferQueue(freshClient, scope());
    try {
      assert.equal(await fresh.size(), 3);
      const first = await fresh.takeDue(10, 5000);
      assert.deepEqual(first.map((m) => m.id), ["due"]);
      assert.deepEqual(first[0]?.msg, JSON.parse(JSON.stringify({ tricky })));
      await sleep(300);
      const soon = await fresh.takeDue(10, 5000);
      assert.deepEqual(soon.map((m) => [m.id, m.collapsed]), [["soon", [{ n: 9 }]]]);
      await fresh.ack([...first, ...soon].map((m) => m.id));
      assert.equal(await fresh.size(), 1, "the msg the dead instance holds waits for its lease");
      await sleep(800);
      const dead = await fresh.takeDue(10, 5000);
      assert.deepEqual(dead.map((m) => m.id), ["taken"]);
      await fresh.ack(["taken"]);
      assert.equal(await fresh.size(), 0);
      assert.deepEqual(await keysUnder(`${prefix}:*`), [], "nothing left behind once every msg was acked");
    } finally {
      await freshClient.quit();
    }
  });

  it("reports and removes a held msg it cannot read back (encrypted under another secret)", async () => {
    const writer = new RedisDeferQueue(admin, scope(), { codec: deferCodec("old-secret", true) });
    await writer.defer(entry({ id: "unreadable" }));
    await writer.defer(entry({ id: "plain-json-is-read" }));
    const damaged: string[] = [];
    const reader = new RedisDeferQueue(admin, scope(), { codec: deferCodec("new-secret", true), onDamaged: (id) => damaged.push(id) });
    await admin.hset(reader.keys.msg, "plain-json-is-read", JSON.stringify({ ...entry({ id: "plain-json-is-read" }), id: "plain-json-is-read" }));
    assert.deepEqual((await reader.takeDue(10, 5000)).map((m) => m.id), ["plain-json-is-read"]);
    assert.deepEqual(damaged, ["unreadable"]);
    assert.equal(await reader.size(), 1, "the unreadable msg was removed, the other is leased");
  });

  it("moves a gate's msgs from the layout before 0.2 (due ones, with what was merged); leased and other gates' stay", async () => {
    const legacy = legacyDeferKeys(prefix);
    const [due, lease, msg, merged, at, ck, collapse] = legacy as [string, string, string, string, string, string, string];
    const now = Date.now();
    const old = (id: string, gate: string, extra: Partial<DeferredMsg> = {}) => JSON.stringify({ ...entry({ id, dueAt: now - 5 }), id, gate, ...extra });
    await admin.zadd(due, now - 5, "mine", now - 4, "other", now + 60_000, "mine-later");
    await admin.zadd(lease, now + 30_000, "mine-leased");
    await admin.hset(msg, "mine", old("mine", GATE, { expiresAt: now + 90_000 }), "other", old("other", "gate-2"), "mine-later", old("mine-later", GATE), "mine-leased", old("mine-leased", GATE));
    await admin.hset(merged, "mine", '{"n":1},{"n":2}');
    await admin.hset(at, "mine", String(now - 5), "other", String(now - 4), "mine-later", String(now + 60_000), "mine-leased", String(now - 100));
    await admin.hset(ck, "mine", "k");
    await admin.hset(collapse, "k", "mine");
    assert.equal(await migrateLegacyQueue(admin, scope()), 2);
    assert.equal(await migrateLegacyQueue(admin, scope()), 0, "nothing moves twice");
    const queue = new RedisDeferQueue(admin, scope());
    assert.equal(await queue.size(), 2);
    const [moved] = await queue.takeDue(10, 5000);
    assert.deepEqual([moved?.id, moved?.collapsed, moved?.expiresAt], ["mine", [{ n: 1 }, { n: 2 }], now + 90_000]);
    assert.deepEqual(await admin.zrange(due, 0, -1), ["other"]);
    assert.deepEqual(await admin.zrange(lease, 0, -1), ["mine-leased"]);
    assert.deepEqual((await admin.hkeys(msg)).sort(), ["mine-leased", "other"]);
    assert.equal(await admin.exists(collapse), 0);
    assert.equal(await migrateLegacyQueue(admin, scope("gate-2")), 1);
  });

  it("knows which gates run somewhere (beats), and forgets a gate that runs nowhere once its queue is empty", async () => {
    const registry = new RedisGateRegistry(admin, prefix, "cfg-1", 200);
    await registry.beat(["g1", "g2"]);
    assert.deepEqual(await registry.orphans(), []);
    const queue = new RedisDeferQueue(admin, scope("g2"));
    await queue.defer({ ...entry({ id: "x" }), gate: "g2" });
    await sleep(250);
    await registry.beat(["g1"]);
    assert.deepEqual(await registry.orphans(), ["g2"]);
    await registry.forget("g2");
    assert.deepEqual(await registry.orphans(), ["g2"], "its queue still holds a msg");
    assert.deepEqual((await registry.known()).sort(), ["g1", "g2"], "every gate it knows, running or not");
    await drain(queue, 10);
    await registry.forget("g2");
    assert.deepEqual(await registry.orphans(), []);
    assert.deepEqual(await registry.known(), ["g1"]);
    await registry.beat(["g2"]);
    assert.deepEqual(await registry.orphans(), []);
  });

  it("measures msgs deferred and taken per second through one Redis", async function () {
    this.timeout(60_000);
    const queue = new RedisDeferQueue(admin, scope());
    const n = 20_000;
    const payload = { text: "Your code is 123456", to: "+15550001111", meta: { campaign: "camp_789", tags: ["a", "b"] } };
    let t = performance.now();
    const now = Date.now();
    for (let from = 0; from < n; from += 1000) {
      await Promise.all(Array.from({ length: 1000 }, (_, i) => queue.defer(entry({ id: `p${from + i}`, dueAt: now - 1, msg: payload }))));
    }
    const deferMs = performance.now() - t;
    t = performance.now();
    const batch = await queue.deferMany(Array.from({ length: n }, (_, i) => ({ entry: entry({ id: `q${i}`, dueAt: now - 1, msg: payload }) })));
    const manyMs = performance.now() - t;
    assert.ok(batch.every((r) => !(r instanceof Error)));
    t = performance.now();
    let taken = 0;
    for (;;) {
      const msgs = await queue.takeDue(100, 30_000);
      if (msgs.length === 0) break;
      taken += msgs.length;
      await queue.ack(msgs.map((m) => m.id));
    }
    const takeMs = performance.now() - t;
    assert.equal(taken, 2 * n);
    console.log(`      defer: ${n} msgs in ${deferMs.toFixed(0)} ms = ${Math.round((n * 1000) / deferMs)} msgs/s (1000 in flight); deferMany: ${Math.round((n * 1000) / manyMs)} msgs/s; takeDue(100)+ack: ${Math.round((2 * n * 1000) / takeMs)} msgs/s (one taker)`);
  });
});
