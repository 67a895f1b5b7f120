import assert from "node:assert/strict";
import type { Pool } from "pg";
import { DEFAULT_CHANNELS } from "../../../src/core/channels";
import { RuleValidationError } from "../../../src/core/errors";
import { RuleConflictError } from "../../../src/core/rules/errors";
import { PgRuleRepository } from "../../../src/postgres/ruleRepository";
import type { RulesTable } from "../../../src/postgres/tableName";
import { closeMigratedSchema, openMigratedSchema } from "../../support/postgres";

describe("core/pgRules: PgRuleRepository (real PostgreSQL)", () => {
  let pool: Pool;
  let schema: string;
  let table: RulesTable;
  let warnings: string[];
  let repo: PgRuleRepository;

  before(async () => {
    ({ pool, schema, table } = await openMigratedSchema("repo"));
  });

  beforeEach(async () => {
    await pool.query(`DELETE FROM ${table.sql}`);
    warnings = [];
    repo = new PgRuleRepository({ db: pool, table, knownChannels: DEFAULT_CHANNELS, warn: (t) => warnings.push(t) });
  });

  after(() => closeMigratedSchema({ pool, schema }));

  it("round-trips a full §4 rule: create, get, update, list, delete", async () => {
    const created = await repo.create("acme", {
      id: "mkt-daily", name: "Marketing, 3 a day", enabled: true, scope: "channel", channel: "sms",
      max_count: 3, window_seconds: 86400, window_type: "rolling", applies_to_categories: ["marketing", "promotional"],
      per: ["campaign_id"], match: { campaign_id: ["camp_789"] }, disposition: "skip",
    });
    assert.equal(created.org, "acme");
    assert.deepEqual(created.match, { campaign_id: ["camp_789"] });
    assert.deepEqual(created.applies_to_categories, ["marketing", "promotional"]);
    assert.match(created.created_at, /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual(await repo.get("acme", "mkt-daily"), created);
    assert.equal(await repo.get("other-org", "mkt-daily"), null);

    const updated = await repo.update("acme", "mkt-daily", { scope: "global", max_count: 5, window_seconds: 60 });
    assert.equal(updated?.previousChannel, "sms");
    assert.equal(updated?.rule.channel, "*");
    assert.equal(updated?.rule.max_count, 5);
    assert.deepEqual(updated?.rule.per, []);
    assert.equal(updated?.rule.created_at, created.created_at);
    assert.ok((updated?.rule.updated_at ?? "") >= created.updated_at);

    await repo.create("acme", { id: "off", scope: "channel", channel: "email", max_count: 1, window_seconds: 1, enabled: false });
    assert.deepEqual((await repo.list("acme")).rules.map((r) => r.id), ["mkt-daily", "off"]);
    assert.deepEqual(await repo.remove("acme", "mkt-daily"), { org: "acme", id: "mkt-daily", channel: "*" });
    assert.equal(await repo.remove("acme", "mkt-daily"), null);
    assert.equal(await repo.update("acme", "mkt-daily", { scope: "global", max_count: 1, window_seconds: 1 }), null);
    assert.deepEqual(warnings, []);
  });

  it("stores enforcement: shadow round-trips, a write without it is enforced, a bad value is refused", async () => {
    const shadow = await repo.create("acme", { id: "trial", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60, enforcement: "shadow" });
    assert.equal(shadow.enforcement, "shadow");
    assert.equal((await repo.rulesFor("acme", "sms"))[0]?.enforcement, "shadow");
    const updated = await repo.update("acme", "trial", { scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 });
    assert.equal(updated?.rule.enforcement, "enforce", "a PUT replaces the rule: no enforcement is the default");
    await assert.rejects(repo.create("acme", { id: "bad", scope: "global", max_count: 1, window_seconds: 60, enforcement: "maybe" }),
      (err) => err instanceof RuleValidationError && err.problems.some((p) => /^enforcement: must be one of/.test(p)));
    // a row written by SQL with an unknown value is skipped with a warning, never enforced half-way
    await pool.query(`INSERT INTO ${table.sql} (id, org, scope, channel, max_count, window_seconds, enforcement) VALUES ('sql', 'acme', 'global', '*', 1, 60, 'soft')`);
    assert.deepEqual((await repo.rulesFor("acme", "sms")).map((r) => r.id), ["trial"]);
    assert.match(warnings.join("\n"), /"sql".*enforcement/);
  });

  it("reads a send's rules: the channel's enabled ones and the org's global ones, nobody else's", async () => {
    await repo.create("acme", { id: "sms-1", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 });
    await repo.create("acme", { id: "sms-off", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60, enabled: false });
    await repo.create("acme", { id: "email-1", scope: "channel", channel: "email", max_count: 1, window_seconds: 60 });
    await repo.create("acme", { id: "all", scope: "global", max_count: 9, window_seconds: 60 });
    await repo.create("globex", { id: "sms-g", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 });
    const rules = await repo.rulesFor("acme", "sms");
    assert.deepEqual(rules.map((r) => r.id), ["all", "sms-1"]);
    assert.equal(rules[0]?.channel, "*");
    assert.equal(repo.loadCount, 1);
  });

  it("refuses a bad write naming every problem, and a second create of one id", async () => {
    await assert.rejects(repo.create("acme", { id: "g", scope: "global", channel: "sms", max_count: 0, window_seconds: 60 }), (err) => {
      assert.ok(err instanceof RuleValidationError);
      assert.ok(err.problems.some((p) => /global cap must not name a channel/.test(p)), err.problems.join("; "));
      assert.ok(err.problems.some((p) => /max_count/.test(p)), err.problems.join("; "));
      return true;
    });
    await assert.rejects(repo.create("acme", { id: "x", org: "globex", scope: "global", max_count: 1, window_seconds: 1 }), /org: must be "acme"/);
    await assert.rejects(repo.update("acme", "x", { id: "y", scope: "global", max_count: 1, window_seconds: 1 }), /id: must be "x"/);
    for (const notARule of [null, [], "rule", 3]) {
      await assert.rejects(repo.create("acme", notARule), /rule: must be an object/);
      await assert.rejects(repo.update("acme", "x", notARule), /rule: must be an object/);
    }
    await repo.create("acme", { id: "dup", scope: "global", max_count: 1, window_seconds: 1 });
    await assert.rejects(repo.create("acme", { id: "dup", scope: "global", max_count: 1, window_seconds: 1 }), RuleConflictError);
    assert.equal((await repo.list("acme")).rules.length, 1);
  });

  it("skips a row that fails the schema, warning once with its org, id and problems, and serves the rest", async () => {
    await repo.create("acme", { id: "good", scope: "channel", channel: "sms", max_count: 2, window_seconds: 60 });
    // written by hand, past the API: the database accepts it, the schema does not
    await pool.query(`INSERT INTO ${table.sql} (id, org, scope, channel, max_count, window_seconds, window_type, per)
      VALUES ('bad', 'acme', 'channel', 'sms', 0, 60, 'fortnightly', '{topic,topic}')`);
    const rules = await repo.rulesFor("acme", "sms");
    assert.deepEqual(rules.map((r) => r.id), ["good"]);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? "", /\(org "acme", id "bad"\)/);
    assert.match(warnings[0] ?? "", /max_count/);
    assert.match(warnings[0] ?? "", /window_type/);
    assert.match(warnings[0] ?? "", /per/);
    await repo.rulesFor("acme", "sms");
    assert.equal(warnings.length, 1, "the same bad row is not reported on every load");
    const listing = await repo.list("acme");
    assert.deepEqual(listing.invalid.map((r) => r.id), ["bad"]);
    await assert.rejects(repo.get("acme", "bad"), /row \(org "acme", id "bad"\) max_count/);

    await pool.query(`UPDATE ${table.sql} SET max_count = 1, window_type = 'rolling', per = '{topic}' WHERE id = 'bad'`);
    assert.deepEqual((await repo.rulesFor("acme", "sms")).map((r) => r.id), ["bad", "good"]);
  });

  it("skips a row on a channel this cap-config does not know", async () => {
    await pool.query(`INSERT INTO ${table.sql} (id, org, scope, channel, max_count, window_seconds)
      VALUES ('pigeon', 'acme', 'channel', 'pigeon', 1, 60)`);
    assert.deepEqual(await repo.rulesFor("acme", "pigeon"), []);
    assert.match(warnings.join("\n"), /\(org "acme", id "pigeon"\).*unknown channel "pigeon"/);
  });

  it("keeps a value with quotes, semicolons and unicode as data, never SQL", async () => {
    const org = `o'; DROP TABLE x; --"ü`;
    await repo.create(org, { id: `i'd"`, scope: "channel", channel: "sms", max_count: 1, window_seconds: 1, match: { k: [`v'"`] } });
    const [rule] = await repo.rulesFor(org, "sms");
    assert.equal(rule?.id, `i'd"`);
    assert.deepEqual(rule?.match, { k: [`v'"`] });
  });
});
