import assert from "node:assert/strict";
import Redis from "ioredis";
import { Collector, flowNode, gateNodes, helper, TAB, type Msg } from "../support/nodeRed";
import { REDIS_URL, uniquePrefix } from "../support/redis";
import { OwnRedis } from "../support/redisServer";
import { storeFields } from "../support/chainFlow";
import { STORE_KINDS, SuiteStore } from "../support/suiteStore";

const HOUR = 3600;
const DAY = 86400;
const WEEK = 7 * DAY;

/** ad 3/day inside campaign 10/week inside category 5/hour, and one ad limited to 1 a day by match */
const HIERARCHY = [
  { id: "ad-daily", scope: "global", max_count: 3, window_seconds: DAY, per: ["ad_id"] },
  { id: "campaign-weekly", scope: "global", max_count: 10, window_seconds: WEEK, per: ["campaign_id"] },
  { id: "category-hourly", scope: "global", max_count: 5, window_seconds: HOUR, per: ["category"] },
  { id: "ad-vip-once", scope: "global", max_count: 1, window_seconds: DAY, per: ["ad_id"], match: { ad_id: ["vip"] } },
];

interface Ad { id: string; ad_id: string; campaign_id: string; category: string }

function ad(i: number): Ad {
  return { id: `ad${i}`, ad_id: i === 0 ? "vip" : `ad${i}`, campaign_id: `c${i % 5}`, category: ["sports", "news", "music"][i % 3] };
}

/** What the caps above allow for `candidate`, given the impressions counted (the test's own model). */
function expected(candidate: Ad, seen: readonly Ad[]): { eligible: boolean; remaining: number; blockedBy?: string } {
  const count = (pick: (a: Ad) => boolean) => seen.filter(pick).length;
  const left: [string, number][] = [
    ["ad-daily", 3 - count((a) => a.ad_id === candidate.ad_id)],
    ["campaign-weekly", 10 - count((a) => a.campaign_id === candidate.campaign_id)],
    ["category-hourly", 5 - count((a) => a.category === candidate.category)],
    ...(candidate.ad_id === "vip" ? [["ad-vip-once", 1 - count((a) => a.ad_id === "vip")] as [string, number]] : []),
  ];
  const remaining = Math.max(0, Math.min(...left.map(([, n]) => n)));
  return { eligible: left.every(([, n]) => n > 0), remaining };
}

interface CheckFlow {
  out: Collector;
  send(id: "recorder" | "checker", msg: Record<string, unknown>): Promise<Msg>;
}

/** One cap-config; a record-mode gate (`recorder`) counts impressions, a check-mode gate (`checker`) answers. */
async function deployCheckFlow(config: Record<string, unknown>): Promise<CheckFlow> {
  await helper.load(gateNodes, [
    TAB,
    { id: "cfg", type: "cap-config", redisUrl: REDIS_URL, rules: HIERARCHY, timeoutMs: 2000, ...config },
    flowNode({ id: "recorder", type: "frequency-cap-gate", config: "cfg", mode: "record", wires: [["allowed"], ["skipped"], []] }),
    flowNode({ id: "checker", type: "frequency-cap-gate", config: "cfg", mode: "check", wires: [["allowed"], ["skipped"], []] }),
    flowNode({ id: "allowed", type: "helper" }),
    flowNode({ id: "skipped", type: "helper" }),
    flowNode({ id: "catch", type: "catch", scope: null, wires: [["caught"]] }),
    flowNode({ id: "caught", type: "helper" }),
  ]);
  const out = new Collector(["allowed", "skipped", "caught"]);
  return {
    out,
    async send(id, msg) {
      const before = out.total();
      (helper.getNode(id) as NonNullable<ReturnType<typeof helper.getNode>>).receive(msg);
      await out.until(before + 1);
      return out.sequence[out.sequence.length - 1]?.msg;
    },
  };
}

function impression(a: Ad, messageId: string, recipient = "viewer"): Record<string, unknown> {
  return { recipient, channel: "in_app", messageId, attributes: { ad_id: a.ad_id, campaign_id: a.campaign_id, category: a.category } };
}

for (const kind of STORE_KINDS) {
  describe(`frequency-cap-gate check mode (${kind} store)`, function () {
    this.timeout(30_000);
    const suite = new SuiteStore(kind);
    suite.hooks();
    const prefixes: string[] = [];
    /** cap-config fields for this store, under a prefix dropped after the test */
    const on = (label: string) => {
      const keyPrefix = uniquePrefix(label);
      prefixes.push(keyPrefix);
      return { ...storeFields(suite), keyPrefix };
    };
    before(() => helper.startServer());
    after(() => helper.stopServer());
    afterEach(async () => {
      await helper.unload();
      for (const p of prefixes.splice(0)) await suite.drop(p);
    });

    it("answers each of 50 candidates right against ad, campaign, category and match caps at once, claiming nothing", async () => {
      const flow = await deployCheckFlow(on(`check-${kind}`));
      // ad1 x3 (its day is full), campaign c2 x10 over several ads, music x5 (its hour is full), vip x1
      const seen = [1, 1, 1, 2, 7, 12, 17, 22, 27, 32, 37, 42, 47, 0, 5, 8].map(ad);
      for (const [i, a] of seen.entries()) await flow.send("recorder", impression(a, `imp-${i}`));
      const candidates = Array.from({ length: 50 }, (_, i) => ad(i));
      const answered = await flow.send("checker", { recipient: "viewer", channel: "in_app", candidates, payload: "bid" });
      const eligible = answered.eligible as Record<string, boolean>;
      const remaining = answered.remaining as Record<string, number>;
      const blocked = answered.blocked as Record<string, { cap_id: string; retry_after_seconds: number }>;
      let refused = 0;
      for (const candidate of candidates) {
        const want = expected(candidate, seen);
        assert.equal(eligible[candidate.id], want.eligible, `${candidate.id} eligible`);
        assert.equal(remaining[candidate.id], want.remaining, `${candidate.id} remaining`);
        if (!want.eligible) {
          refused++;
          assert.ok((blocked[candidate.id]?.retry_after_seconds ?? 0) > 0, `${candidate.id} blocked ${JSON.stringify(blocked[candidate.id])}`);
        } else {
          assert.equal(blocked[candidate.id], undefined);
        }
      }
      assert.ok(refused >= 20 && refused < 50, `a mix: ${refused} refused`);
      assert.equal(blocked.ad1?.cap_id, "ad-daily");
      assert.equal(blocked.ad2?.cap_id, "campaign-weekly", "ad2's campaign (full for a week) frees after its category (full for an hour)");
      assert.equal((answered.admission as { status: string }).status, "allowed");
      assert.equal(flow.out.of("skipped").length, 0, "a check refuses nothing");
      // nothing was claimed: the same check answers the same
      const again = await flow.send("checker", { recipient: "viewer", channel: "in_app", candidates });
      assert.deepEqual({ ...(again.remaining as object) }, { ...remaining });
    });

    it("counts a duplicate impression event once, and checks the msg's own send without candidates", async () => {
      const flow = await deployCheckFlow(on(`dup-${kind}`));
      const own = { recipient: "v2", channel: "in_app", attributes: { ad_id: "ad9", campaign_id: "c9", category: "news" } };
      await flow.send("recorder", impression(ad(9), "event-1", "v2"));
      await flow.send("recorder", impression(ad(9), "event-1", "v2"));
      const checked = await flow.send("checker", { ...own });
      assert.equal(checked.eligible, true);
      assert.equal(checked.remaining, 2, "3 a day, one impression counted once");
      await flow.send("recorder", impression(ad(9), "event-2", "v2"));
      await flow.send("recorder", impression(ad(9), "event-3", "v2"));
      const full = await flow.send("checker", { ...own });
      assert.equal(full.eligible, false);
      assert.deepEqual({ ...(full.blocked as object) }, { cap_id: "ad-daily", retry_after_seconds: (full.blocked as { retry_after_seconds: number }).retry_after_seconds });
    });

    it("answers an empty candidates array with empty answers (nothing to check, not the msg's own send)", async () => {
      const flow = await deployCheckFlow(on(`empty-${kind}`));
      const checked = await flow.send("checker", { recipient: "v3", channel: "in_app", candidates: [] });
      assert.deepEqual([{ ...(checked.eligible as object) }, { ...(checked.remaining as object) }, { ...(checked.blocked as object) }], [{}, {}, {}]);
      // the candidates after it are answered as ever: the empty check left nothing behind
      const next = await flow.send("checker", { recipient: "v3", channel: "in_app", candidates: [ad(1), ad(2)] });
      assert.deepEqual({ ...(next.eligible as object) }, { ad1: true, ad2: true });
      assert.deepEqual({ ...(next.remaining as object) }, { ad1: 3, ad2: 3 });
    });

    it("records and checks 30 viewers alike, concurrently (on a cluster: viewers on every master)", async () => {
      const flow = await deployCheckFlow(on(`many-${kind}`));
      const viewers = Array.from({ length: 30 }, (_, i) => `viewer-${i}`);
      // viewer-i saw ad9 (i % 4) times, each event sent twice: counted once
      const events = viewers.flatMap((v, i) => Array.from({ length: i % 4 }, (_, n) => impression(ad(9), `${v}-e${n}`, v)));
      for (const e of [...events, ...events]) (helper.getNode("recorder") as NonNullable<ReturnType<typeof helper.getNode>>).receive(e);
      await flow.out.until(events.length * 2, 15_000);
      assert.equal(flow.out.of("caught").length, 0, "no store error (CROSSSLOT or other)");
      const checker = helper.getNode("checker") as NonNullable<ReturnType<typeof helper.getNode>>;
      const before = flow.out.total();
      for (const v of viewers) checker.receive({ recipient: v, channel: "in_app", candidates: [ad(9)] });
      await flow.out.until(before + viewers.length, 15_000);
      const answerOf = new Map(flow.out.sequence.slice(before).map(({ msg }) => [msg.recipient as string, msg]));
      for (const [i, v] of viewers.entries()) {
        const answer = answerOf.get(v) as Msg;
        const seen = i % 4;
        assert.equal((answer.remaining as Record<string, number>).ad9, 3 - seen, `${viewers[i]} remaining`);
        assert.equal((answer.eligible as Record<string, boolean>).ad9, seen < 3, `${viewers[i]} eligible`);
      }
    });

    it("a burst: 6,000 impression events in one tick (each twice), then 2,000 checks in one tick, each viewer answered by its own count", async function () {
      this.timeout(90_000);
      const flow = await deployCheckFlow(on(`burst-${kind}`));
      const viewers = Array.from({ length: 2000 }, (_, i) => `burst-viewer-${i}`);
      // viewer-i saw ad9 (i % 4) times, each event delivered twice: counted once
      const events = viewers.flatMap((v, i) => Array.from({ length: i % 4 }, (_, n) => impression(ad(9), `${v}-e${n}`, v)));
      const recorder = helper.getNode("recorder") as NonNullable<ReturnType<typeof helper.getNode>>;
      for (const e of [...events, ...events]) recorder.receive({ ...e });
      await flow.out.until(events.length * 2, 60_000);
      assert.equal(flow.out.of("caught").length, 0, "no store error");
      const checker = helper.getNode("checker") as NonNullable<ReturnType<typeof helper.getNode>>;
      const before = flow.out.total();
      // ad1, never seen, beside ad9: every answer names both
      for (const v of viewers) checker.receive({ recipient: v, channel: "in_app", candidates: [ad(9), ad(1)] });
      await flow.out.until(before + viewers.length, 60_000);
      const answerOf = new Map(flow.out.sequence.slice(before).map(({ msg }) => [msg.recipient as string, msg]));
      assert.equal(answerOf.size, viewers.length, "every check answered once");
      for (const [i, v] of viewers.entries()) {
        const answer = answerOf.get(v) as Msg;
        const seen = i % 4;
        assert.deepEqual({ ...(answer.remaining as object) }, { ad9: 3 - seen, ad1: 3 }, `${v} remaining`);
        assert.equal((answer.eligible as Record<string, boolean>).ad9, seen < 3, `${v} eligible`);
        assert.equal((answer.admission as { reason?: string }).reason, undefined, `${v}: no fail_open`);
      }
    });

    it("sends bad candidates to Catch, naming the index", async () => {
      const flow = await deployCheckFlow(on(`bad-${kind}`));
      const message = async (candidates: unknown) => {
        const caught = await flow.send("checker", { recipient: "v", channel: "in_app", candidates });
        return String((caught.error as { message: string }).message);
      };
      assert.match(await message("ad7"), /candidates: must be an array/);
      assert.match(await message([{ id: "a" }, 7]), /candidates\[1\]: must be an object/);
      assert.match(await message([{ id: "a", ad_id: { x: 1 } }]), /candidates\[0\]\.ad_id: must be a string/);
      assert.match(await message(Array.from({ length: 501 }, (_, i) => ({ id: `a${i}` }))), /candidates: at most 500/);
      assert.match(await message([{ id: "a" }, { id: "a" }]), /candidates\[1\]\.id: "a" is also candidate 0's/);
      assert.equal(flow.out.of("caught").length, 5);
    });
  });
}

describe("check mode on Redis costs one command for 50 candidates", function () {
  this.timeout(30_000);
  const own = new OwnRedis();
  before(async () => {
    await own.start();
    await helper.startServer();
  });
  after(async () => {
    await helper.stopServer();
    await own.stop();
    own.cleanUp();
  });
  afterEach(() => helper.unload());

  it("answers 50 candidates with a single EVALSHA", async () => {
    const flow = await deployCheckFlow({ store: "redis", redisUrl: own.url, keyPrefix: uniquePrefix("one-call") });
    const candidates = Array.from({ length: 50 }, (_, i) => ad(i));
    await flow.send("checker", { recipient: "warm", channel: "in_app", candidates }); // loads the script
    const admin = new Redis(own.url);
    const calls = async () => {
      const stats = await admin.info("commandstats");
      return new Map([...stats.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].map(([, name, n]) => [name, Number(n)]));
    };
    const before = await calls();
    const answered = await flow.send("checker", { recipient: "viewer", channel: "in_app", candidates });
    const after = await calls();
    await admin.quit();
    assert.equal(Object.keys(answered.eligible as object).length, 50);
    const grown = [...after].filter(([name, n]) => name !== "info" && n !== (before.get(name) ?? 0)).map(([name, n]) => [name, n - (before.get(name) ?? 0)]);
    // one command from the gate; inside the script, one TIME and one HMGET of the counters all 50 share
    assert.deepEqual(new Map(grown as [string, number][]), new Map([["evalsha", 1], ["time", 1], ["hmget", 1]]), JSON.stringify(grown));
  });
});
