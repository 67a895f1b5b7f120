import assert from "node:assert/strict";
import { Pool } from "pg";
import { deployGateFlow, type GateFlow } from "../support/gateFlow";
import { helper, reasonOf } from "../support/nodeRed";
import { OwnPostgres } from "../support/postgres";
import { sleep, uniquePrefix } from "../support/redis";

const CAP = { id: "cap", scope: "channel", channel: "sms", max_count: 2, window_seconds: 3600 };

/**
 * Two cap-configs (two instances) on one Redis and on a PostgreSQL of the
 * test's own, which the test stops and starts (pg_ctl) while rules are cached
 * and while admin writes are in flight.
 */
describe("PostgreSQL restarts under two instances with cached rules", function () {
  this.timeout(90_000);
  let pg: OwnPostgres;
  let pool: Pool;

  before(async function () {
    if (!OwnPostgres.available()) {
      console.log("      (skipped: no initdb/pg_ctl under PG_BIN; this test runs a PostgreSQL cluster of its own)");
      this.skip();
    }
    this.timeout(60_000);
    pg = new OwnPostgres();
    await pg.init();
    await pg.start();
    pool = new Pool({ connectionString: pg.url, max: 2 });
    pool.on("error", () => undefined);
    await helper.startServer();
  });
  after(async () => {
    await helper.stopServer();
    await pool?.end();
    await pg?.stop();
    pg?.cleanUp();
  });
  let pgUp = true;
  const stopPg = async () => { pgUp = false; await pg.stop(); };
  const startPg = async () => { await pg.start(); pgUp = true; };
  afterEach(async () => {
    await helper.unload();
    if (!pgUp) await startPg(); // a failed test left it stopped
  });

  const deploy = (): Promise<GateFlow> => deployGateFlow({
    store: "redis", instances: 2, rules: [],
    config: { rulesSource: "postgres", pgUrl: pg.url, keyPrefix: uniquePrefix("pgrestart"), timeoutMs: 2000, defaultOrg: "acme" },
  });
  const api = () => helper.request();
  /** `count` sends to `recipient` through instance `at`, one after another; the ids that were allowed */
  async function burst(flow: GateFlow, at: number, recipient: string, count: number): Promise<string[]> {
    const before = flow.out.of("allowed").length;
    for (let i = 0; i < count; i++) {
      const total = flow.out.total();
      flow.send({ recipient, channel: "sms", messageId: `${recipient}-${i}` }, at);
      await flow.out.until(total + 1);
    }
    return flow.out.of("allowed").slice(before).map((m) => String(m.messageId));
  }
  async function untilTable(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const res = await api().get("/frequency-cap/cfg0/caps");
      if (res.status === 200) return;
      await sleep(50);
    }
    throw new Error("the rules table never answered");
  }

  it("keeps the cached rules through the outage, and a rule edited on one instance after the restart applies on the other at once", async () => {
    const flow = await deploy();
    await untilTable();
    assert.equal((await api().post("/frequency-cap/cfg0/caps").send(CAP)).status, 201);
    await sleep(100);
    assert.equal((await burst(flow, 1, "before-1", 3)).length, 2, "instance 1 loaded the cap of 2");
    assert.equal((await burst(flow, 0, "before-0", 3)).length, 2, "instance 0 loaded the cap of 2");

    await stopPg();
    const during = [...await burst(flow, 1, "during-1", 3), ...await burst(flow, 0, "during-0", 3)];
    assert.deepEqual(during, ["during-1-0", "during-1-1", "during-0-0", "during-0-1"], "both instances kept capping at 2 while PostgreSQL was down");
    assert.ok(flow.out.sequence.every(({ msg }) => reasonOf(msg) !== "fail_open"), "no send failed open");
    const refused = await api().put("/frequency-cap/cfg0/caps/cap").send({ ...CAP, max_count: 4 });
    assert.equal(refused.status, 503, `a write while the database is down answers 503: ${refused.status} ${refused.text}`);

    const restarted = Date.now();
    await startPg();
    let editedAfter = 0;
    for (;;) {
      const res = await api().put("/frequency-cap/cfg0/caps/cap").send({ ...CAP, max_count: 4 });
      if (res.status === 200) break;
      assert.equal(res.status, 503, res.text);
      assert.ok(Date.now() - restarted < 15_000, "the admin API wrote again within 15 s of PostgreSQL's return");
      await sleep(100);
    }
    editedAfter = Date.now() - restarted;
    await sleep(100);
    // instance 1 cached (acme, sms) with the cap of 2 for 30 s: only the invalidation explains 4 now
    const after = await burst(flow, 1, "after", 5);
    const { rows } = await pool.query("SELECT max_count FROM frequency_caps WHERE org = 'acme' AND id = 'cap'");
    console.log(`      PostgreSQL restart with cached rules: ${during.length + 2} sends during the outage kept the cap (0 fail open); first admin write ${editedAfter} ms after pg_ctl start; the edit reached the other instance: ${after.length} of 5 allowed under the new max 4`);
    assert.equal(rows[0]?.max_count, 4);
    assert.equal(after.length, 4, "instance 1 applied the edit made through instance 0 without a redeploy");
  });

  it("lets each admin write in flight during a restart land whole or answer an error, never half", async () => {
    const flow = await deploy();
    await untilTable();
    await pool.query("DELETE FROM frequency_caps");
    await sleep(100);
    await burst(flow, 1, "warm", 1);
    const N = 60;
    const body = (i: number) => ({ id: `w${i}`, name: `write ${i}`, scope: "channel", channel: i % 2 ? "sms" : "email", max_count: i + 1, window_seconds: 60 + i, enforcement: i % 3 ? "enforce" : "shadow" });
    const answers: { i: number; status: number }[] = [];
    let stopping: Promise<void> | undefined;
    const writes: Promise<void>[] = [];
    for (let i = 0; i < N; i++) {
      writes.push(new Promise<void>((resolve, reject) => {
        api().post("/frequency-cap/cfg0/caps").send(body(i)).then((res) => { answers.push({ i, status: res.status }); resolve(); }, reject);
      }));
      if (i === 15) stopping = stopPg();
      await sleep(5);
    }
    await stopping;
    await Promise.all(writes);
    await startPg();
    const back = Date.now();
    const { rows } = await pool.query<{ id: string; name: string; channel: string; max_count: number; window_seconds: number; enforcement: string }>(
      "SELECT id, name, channel, max_count, window_seconds, enforcement FROM frequency_caps WHERE org = 'acme'");
    const landed = new Map(rows.map((r) => [r.id, r]));
    const statuses = new Map<number, number>();
    for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    let errorButLanded = 0;
    for (const { i, status } of answers) {
      const row = landed.get(`w${i}`);
      if (row) {
        const want = body(i);
        assert.deepEqual([row.name, row.channel, row.max_count, row.window_seconds, row.enforcement],
          [want.name, want.channel, want.max_count, want.window_seconds, want.enforcement], `w${i} landed whole`);
      }
      if (status === 201) assert.ok(row, `w${i} answered 201 and is stored`);
      else {
        assert.equal(status, 503, `w${i} answered ${status}: a write the database did not take answers 503`);
        if (row) errorButLanded++;
      }
    }
    assert.equal(answers.length, N, "every write was answered");
    assert.ok((statuses.get(201) ?? 0) > 0 && (statuses.get(503) ?? 0) > 0, "some writes landed before the stop and some were refused");
    assert.equal(errorButLanded, 0, "no write answered an error yet landed");
    // what landed is what the other instance enforces once the database is back: its cache went stale in the outage
    // (an invalidation came, the reload failed) and reloads in the background (at most one retry interval, 1 s)
    const lowest = Math.min(...rows.filter((r) => r.channel === "sms" && r.enforcement === "enforce").map((r) => r.max_count));
    assert.ok(Number.isFinite(lowest), "an sms cap landed");
    let enforcedAfter = -1;
    for (let round = 0; enforcedAfter < 0; round++) {
      const sent = await burst(flow, 1, `check${round}`, lowest + 1);
      if (sent.length === lowest) enforcedAfter = Date.now() - back;
      else assert.ok(Date.now() - back < 5000, `instance 1 still allows ${sent.length} of ${lowest + 1} 5 s after the restart`);
      await sleep(100);
    }
    console.log(`      PostgreSQL stopped under ${N} concurrent rule writes: ${[...statuses].map(([st, n]) => `${n}×${st}`).join(", ")}; ${landed.size} landed whole, 0 half-applied, ${errorButLanded} answered 503 yet landed; the other instance enforced what landed ${enforcedAfter} ms after pg_ctl start`);
  });
});
