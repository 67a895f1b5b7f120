import assert from "node:assert/strict";
import type { Pool } from "pg";
import { deployGateFlow, sendInOrder, type GateFlow } from "../support/gateFlow";
import { helper, type Msg } from "../support/nodeRed";
import { DATABASE_URL, createSchema, dropSchema, testPool, uniqueSchema } from "../support/postgres";
import { parsePrometheusText, total } from "../support/promText";
import { dropPrefix, redisClient, sleep, uniquePrefix } from "../support/redis";
import { useUserDir } from "../support/userDir";

const HOUR = 3600;
const SHADOW = { id: "new-cap", scope: "channel", channel: "sms", max_count: 1, window_seconds: HOUR, enforcement: "shadow" };
const ENFORCED = { id: "old-cap", scope: "channel", channel: "sms", max_count: 3, window_seconds: HOUR };

type Admission = { status: string; reason?: string; shadow?: { cap_id: string; count: number; max: number }[]; remaining?: number; claims: { cap_ids?: string[] }[] };
const admissionOf = (m: Msg | undefined) => m?.admission as Admission;
const sends = (prefix: string, n: number, recipient = "r") => Array.from({ length: n }, (_, i) => ({ recipient, channel: "sms", messageId: `${prefix}${i}` }));

async function wouldRefuse(capId: string, org: string): Promise<number> {
  const res = await helper.request().get("/frequency-cap/cfg0/metrics");
  assert.equal(res.status, 200, res.text);
  return total(parsePrometheusText(res.text), "sendgate_shadow_would_refuse_total", { gate: "gate0", cap_id: capId, org });
}

/** Five sends against a shadow cap of 1: all allowed, the last four list it, and the metric says 4. */
async function fiveSends(flow: GateFlow, org: string): Promise<void> {
  await sendInOrder(flow, sends("s", 5));
  const allowed = flow.out.of("allowed");
  assert.equal(allowed.length, 5, "a shadow cap never refuses");
  assert.equal(flow.out.of("skipped").length, 0);
  assert.equal(admissionOf(allowed[0]).shadow, undefined, "the first send fits the shadow cap");
  for (const msg of allowed.slice(1)) {
    assert.deepEqual(admissionOf(msg).shadow, [{ cap_id: "new-cap", count: 1, max: 1 }], "its counter holds only the send it let through");
    assert.equal(admissionOf(msg).status, "allowed");
  }
  assert.equal(await wouldRefuse("new-cap", org), 4);
}

for (const store of ["memory", "redis"] as const) {
  describe(`shadow caps, inline rules (${store} store)`, function () {
    this.timeout(30_000);
    const redis = redisClient();
    let keyPrefix: string;
    // the memory store keeps its counters in the user dir across a redeploy
    useUserDir(`shadow-${store}`);
    before(() => helper.startServer());
    after(async () => {
      await helper.stopServer();
      await redis.quit();
    });
    beforeEach(() => { keyPrefix = uniquePrefix(`shadow-${store}`); });
    afterEach(async () => {
      await helper.unload();
      await dropPrefix(redis, keyPrefix);
    });
    const deploy = (rules: object[], gate: Record<string, unknown> = {}) => deployGateFlow({ store, config: { keyPrefix, timeoutMs: 2000 }, rules, gate });

    it("lets all 5 sends through a shadow cap of 1, counting 4 it would have refused", async () => {
      await fiveSends(await deploy([SHADOW]), "*");
    });

    it("refuses by the enforced cap only; a refused send claims no shadow slot; remaining ignores the shadow cap", async () => {
      const flow = await deploy([ENFORCED, { ...SHADOW, max_count: 2 }]);
      await sendInOrder(flow, sends("m", 5));
      assert.deepEqual(flow.out.of("allowed").map((m) => m.messageId), ["m0", "m1", "m2"]);
      assert.deepEqual(flow.out.of("skipped").map((m) => admissionOf(m).reason), ["frequency_capped", "frequency_capped"]);
      assert.deepEqual(flow.out.of("skipped").map((m) => (m.admission as { cap_id: string }).cap_id), ["old-cap", "old-cap"]);
      const third = admissionOf(flow.out.of("allowed")[2]);
      assert.deepEqual(third.shadow, [{ cap_id: "new-cap", count: 2, max: 2 }]);
      assert.equal(third.remaining, 0, "the enforced cap's free slots");
      assert.deepEqual(third.claims[0]?.cap_ids, ["old-cap"], "no slot taken in the shadow cap, none to give back");
      assert.equal((await helper.request().get("/frequency-cap/cfg0/usage?recipient=r&channel=sms")).status, 200);
      const usage = (await helper.request().get("/frequency-cap/cfg0/usage?recipient=r&channel=sms")).body as { caps: { cap_id: string; count: number; enforcement: string }[] };
      assert.deepEqual(usage.caps.map((c) => [c.cap_id, c.count, c.enforcement]), [["old-cap", 3, "enforce"], ["new-cap", 2, "shadow"]]);
      assert.equal(await wouldRefuse("new-cap", "*"), 1, "only the admitted send it would have stopped");
    });

    it("check mode: a full shadow cap neither blocks nor lowers remaining", async () => {
      const flow = await deploy([SHADOW, ENFORCED]);
      await sendInOrder(flow, sends("a", 1));
      await helper.unload();
      const check = await deployGateFlow({ store, config: { keyPrefix, timeoutMs: 2000 }, rules: [SHADOW, ENFORCED], gate: { mode: "check" } });
      await sendInOrder(check, sends("c", 1));
      const [answer] = check.out.of("allowed");
      assert.equal(answer?.eligible, true);
      assert.equal(answer?.remaining, 2);
    });

    it("decides a burst of 2,000 sends in one tick: each recipient's first passes the shadow cap, the rest are listed, none refused", async () => {
      const flow = await deploy([SHADOW]);
      for (let i = 0; i < 2000; i++) flow.send({ recipient: `u${i % 400}`, channel: "sms", messageId: `b${i}` });
      await flow.out.until(2000, 15_000);
      const listed = flow.out.of("allowed").filter((m) => admissionOf(m).shadow !== undefined).length;
      assert.equal(flow.out.of("allowed").length, 2000);
      assert.equal(listed, 1600);
      assert.equal(await wouldRefuse("new-cap", "*"), 1600);
    });
  });
}

describe("shadow caps from PostgreSQL, created through the admin API", function () {
  this.timeout(60_000);
  let pool: Pool;
  let schema: string;
  let keyPrefix: string;
  const redis = redisClient();
  before(async () => {
    pool = testPool();
    await helper.startServer();
  });
  after(async () => {
    await helper.stopServer();
    await pool.end();
    await redis.quit();
  });
  beforeEach(async () => {
    schema = uniqueSchema("shadow");
    keyPrefix = uniquePrefix("shadow-pg");
    await createSchema(pool, schema);
  });
  afterEach(async () => {
    await helper.unload();
    await dropSchema(pool, schema);
    await dropPrefix(redis, keyPrefix);
  });

  it("takes a shadow cap written by the API: 5 sends allowed, would_refuse 4; switched to enforce, it refuses the next", async () => {
    const flow = await deployGateFlow({
      store: "redis", rules: [],
      config: { rulesSource: "postgres", pgUrl: DATABASE_URL, pgTable: `${schema}.frequency_caps`, keyPrefix, timeoutMs: 2000, defaultOrg: "acme" },
    });
    let created = await helper.request().post("/frequency-cap/cfg0/caps").send(SHADOW);
    for (let i = 0; created.status === 503 && i < 100; i++) {
      await sleep(50);
      created = await helper.request().post("/frequency-cap/cfg0/caps").send(SHADOW);
    }
    assert.equal(created.status, 201, created.text);
    assert.equal((created.body as { enforcement: string }).enforcement, "shadow");
    const listed = (await helper.request().get("/frequency-cap/cfg0/caps")).body as { rules: { id: string; enforcement: string }[] };
    assert.deepEqual(listed.rules.map((r) => [r.id, r.enforcement]), [["new-cap", "shadow"]]);
    const bad = await helper.request().post("/frequency-cap/cfg0/caps").send({ ...SHADOW, id: "x", enforcement: "soft" });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body), /enforcement: must be one of/);

    await fiveSends(flow, "acme");
    const metrics = parsePrometheusText((await helper.request().get("/frequency-cap/cfg0/metrics")).text);
    assert.ok(total(metrics, "sendgate_rule_cache_hits_total") >= 4, "the sends' rules came from the cache");
    assert.ok(total(metrics, "sendgate_rule_cache_invalidations_total", { scope: "channel" }) >= 1, "the create invalidated sms");

    const enforced = await helper.request().put("/frequency-cap/cfg0/caps/new-cap").send({ ...SHADOW, enforcement: "enforce" });
    assert.equal(enforced.status, 200, enforced.text);
    await sendInOrder(flow, sends("after-", 1));
    assert.equal(admissionOf(flow.out.of("skipped")[0]).reason, "frequency_capped", "enforced, the cap refuses at once");
  });
});
