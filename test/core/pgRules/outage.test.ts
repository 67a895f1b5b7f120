import assert from "node:assert/strict";
import { RulesUnavailableError } from "../../../src/core/rules/errors";
import { PgRuleSource } from "../../../src/postgres/ruleSource";
import type { RulesState } from "../../../src/core/rules/ruleCache";
import { OwnPostgres } from "../../support/postgres";
import { sleep } from "../../support/redis";

describe("core/pgRules: PostgreSQL stopped and restarted under a PgRuleSource", function () {
  this.timeout(90_000);
  let pg: OwnPostgres | undefined;
  let source: PgRuleSource | undefined;

  before(async function () {
    if (!OwnPostgres.available()) {
      console.log("      (skipped: no initdb/pg_ctl under PG_BIN; this test runs a PostgreSQL cluster of its own)");
      this.skip();
    }
    pg = new OwnPostgres();
    await pg.init();
    await pg.start();
  });

  after(async () => {
    await source?.close();
    await pg?.stop();
    pg?.cleanUp();
  });

  it("keeps serving the last rules loaded, says so once, and recovers by itself", async () => {
    const db = pg as OwnPostgres;
    const warnings: string[] = [];
    const states: RulesState[] = [];
    const s = await PgRuleSource.open({ url: db.url, ttlMs: 200, retryMs: 200, warn: (t) => warnings.push(t) });
    source = s;
    s.onStateChange((state) => states.push(state));
    await s.create("acme", { id: "sms-3", scope: "channel", channel: "sms", max_count: 3, window_seconds: 60 });
    await s.create("acme", { id: "all", scope: "global", max_count: 9, window_seconds: 60 });
    assert.deepEqual((await s.rulesFor("acme", "sms")).map((r) => r.id), ["all", "sms-3"]);

    await db.stop();
    await sleep(250); // past the TTL
    let slowest = 0;
    for (let i = 0; i < 20; i++) {
      const started = Date.now();
      assert.deepEqual((await s.rulesFor("acme", "sms")).map((r) => r.id), ["all", "sms-3"], `send ${i} during the outage`);
      if (i > 0) slowest = Math.max(slowest, Date.now() - started);
      await sleep(25);
    }
    assert.ok(slowest < 20, `once the outage is known a send waits for no retry (slowest ${slowest} ms)`);
    assert.equal(s.state(), "stale");
    await assert.rejects(s.rulesFor("acme", "email"), RulesUnavailableError, "a key never loaded has nothing to serve");
    const outageWarnings = warnings.filter((w) => /could not be loaded/.test(w));
    assert.equal(outageWarnings.length, 1, warnings.join("\n"));

    await db.start();
    const until = Date.now() + 10_000;
    while (s.state() !== "ok") {
      if (Date.now() > until) assert.fail("did not recover within 10 s of PostgreSQL's return");
      assert.deepEqual((await s.rulesFor("acme", "sms")).map((r) => r.id), ["all", "sms-3"]);
      await sleep(50);
    }
    assert.deepEqual(states, ["stale", "ok"]);
    assert.equal(warnings.filter((w) => /database is back/.test(w)).length, 1);
    await s.update("acme", "sms-3", { scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 });
    assert.equal((await s.rulesFor("acme", "sms")).find((r) => r.id === "sms-3")?.max_count, 1);
    assert.deepEqual((await s.rulesFor("acme", "email")).map((r) => r.id), ["all"]);
  });
});
