import assert from "node:assert/strict";
import fc from "fast-check";
import type { Pool } from "pg";
import { deployGateFlow } from "../support/gateFlow";
import { helper } from "../support/nodeRed";
import { DATABASE_URL, createSchema, dropSchema, testPool, uniqueSchema } from "../support/postgres";
import { dropPrefix, redisClient, sleep, uniquePrefix } from "../support/redis";
import { hostileString, hostileValue } from "./arbitraries";

/** A rule-shaped body: the right keys, often with the wrong kind of value. */
const ruleBody = fc.record({
  id: fc.oneof(hostileString, hostileValue),
  scope: fc.oneof(fc.constantFrom("channel", "global"), hostileValue),
  channel: fc.oneof(fc.constantFrom("sms", "*"), hostileValue),
  max_count: fc.oneof(fc.integer({ min: -2, max: 5 }), hostileValue),
  window_seconds: fc.oneof(fc.integer({ min: -2, max: 100_000 }), hostileValue),
  per: fc.oneof(fc.array(hostileString, { maxLength: 3 }), hostileValue),
  match: fc.oneof(fc.dictionary(hostileString, fc.array(hostileString, { maxLength: 2 }), { maxKeys: 2 }), hostileValue),
  applies_to_categories: fc.oneof(fc.array(hostileString, { maxLength: 2 }), hostileValue),
  window_type: fc.oneof(fc.constantFrom("rolling", "calendar_day"), hostileValue),
  enforcement: fc.oneof(fc.constantFrom("enforce", "shadow"), hostileValue),
}, { requiredKeys: [] });

const anyBody = fc.oneof(ruleBody, fc.jsonValue(), fc.array(ruleBody, { maxLength: 3 }), fc.string());

const entryBody = fc.oneof(
  fc.record({ recipient: fc.oneof(hostileString, hostileValue), channel: fc.oneof(fc.constantFrom("sms", "*"), hostileValue), org: hostileValue, reason: hostileValue }, { requiredKeys: [] }),
  fc.array(fc.record({ recipient: fc.oneof(hostileString, hostileValue), channel: hostileValue }, { requiredKeys: [] }), { maxLength: 4 }),
  fc.jsonValue(),
);

/** A URL path segment: a URL carries UTF-8, where an unpaired surrogate has no place (the caller's client replaces it). */
function segment(id: string): string {
  return encodeURIComponent((id as string & { toWellFormed(): string }).toWellFormed());
}

describe("hostile input to every admin route (fast-check): never a 500", function () {
  this.timeout(180_000);
  let pool: Pool;
  let schema: string;
  const keyPrefix = uniquePrefix("hostile-api");
  const redis = redisClient();

  before(async () => {
    pool = testPool();
    schema = uniqueSchema("hostile");
    await createSchema(pool, schema);
    helper.settings({ userDir: undefined });
    await helper.startServer();
    await deployGateFlow({
      store: "redis", rules: [],
      config: { rulesSource: "postgres", pgUrl: DATABASE_URL, pgTable: `${schema}.frequency_caps`, keyPrefix, timeoutMs: 2000 },
    });
    for (let i = 0; i < 200 && (await helper.request().get("/frequency-cap/cfg0/caps")).status !== 200; i++) await sleep(20);
  });
  after(async () => {
    await helper.unload();
    await helper.stopServer();
    await dropSchema(pool, schema);
    await pool.end();
    await dropPrefix(redis, keyPrefix);
    await redis.quit();
  });

  /**
   * Only the answers a route can honestly give; a 400 of a route says why (a
   * body the admin app's strict JSON parser refuses, a bare `0`, never reaches
   * a route: its 400 is the parser's own).
   */
  function assertHonest(res: { status: number; body: unknown; headers: Record<string, string> }, allowed: readonly number[], what: string): void {
    assert.ok(allowed.includes(res.status), `${what}: ${res.status} ${JSON.stringify(res.body)?.slice(0, 300)}`);
    const json = String(res.headers["content-type"] ?? "").startsWith("application/json");
    if (res.status === 400 && json) assert.equal(typeof (res.body as { error?: unknown }).error, "string", `${what}: a 400 says why`);
  }

  it("POST and PUT caps", async () => {
    await fc.assert(fc.asyncProperty(anyBody, hostileString, async (body, id) => {
      // as JSON text: a body may be a bare number or boolean, which supertest will not serialise itself
      const created = await helper.request().post("/frequency-cap/cfg0/caps").set("content-type", "application/json").send(JSON.stringify(body) ?? "null");
      assertHonest(created, [201, 400, 409], `POST ${JSON.stringify(body)?.slice(0, 200)}`);
      const updated = await helper.request().put(`/frequency-cap/cfg0/caps/${segment(id)}`).set("content-type", "application/json").send(JSON.stringify(body) ?? "null");
      assertHonest(updated, [200, 400, 404], `PUT ${JSON.stringify(body)?.slice(0, 200)}`);
      const removed = await helper.request().delete(`/frequency-cap/cfg0/caps/${segment(id)}`);
      assertHonest(removed, [200, 400, 404], "DELETE");
    }), { numRuns: 150 });
  });

  it("POST and DELETE suppressions (JSON and CSV), GET suppressions, usage and totals", async () => {
    await fc.assert(fc.asyncProperty(entryBody, hostileString, hostileString, async (body, text, query) => {
      const posted = await helper.request().post("/frequency-cap/cfg0/suppressions").set("content-type", "application/json").send(JSON.stringify(body) ?? "null");
      assertHonest(posted, [201, 400], `POST ${JSON.stringify(body)?.slice(0, 200)}`);
      const csv = await helper.request().post("/frequency-cap/cfg0/suppressions").set("content-type", "text/csv").send(text);
      assertHonest(csv, [201, 400], `CSV ${JSON.stringify(text).slice(0, 200)}`);
      const deleted = await helper.request().delete("/frequency-cap/cfg0/suppressions").query({ recipient: query, channel: text });
      assertHonest(deleted, [200, 400], "DELETE ?recipient");
      const listed = await helper.request().get("/frequency-cap/cfg0/suppressions").query({ org: query, cursor: text, count: text });
      assertHonest(listed, [200, 400], "GET suppressions");
      const usage = await helper.request().get("/frequency-cap/cfg0/usage").query({ recipient: query, channel: text, org: text, attributes: query });
      assertHonest(usage, [200, 400], "GET usage");
      const totals = await helper.request().get("/frequency-cap/cfg0/totals").query({ org: text, attributes: query });
      assertHonest(totals, [200, 400], "GET totals");
    }), { numRuns: 150 });
  });

  it("GET metrics: its own cap-config's text whatever the query, a 404 for any other id", async () => {
    await fc.assert(fc.asyncProperty(hostileString, hostileString, async (id, query) => {
      const own = await helper.request().get("/frequency-cap/cfg0/metrics").query({ org: query, name: query });
      assertHonest(own, [200], "GET metrics");
      assert.match(own.text, /^# HELP sendgate_/m);
      const other = await helper.request().get(`/frequency-cap/${segment(id)}/metrics`);
      assertHonest(other, id === "cfg0" ? [200] : [404], `GET metrics of ${JSON.stringify(id).slice(0, 100)}`);
    }), { numRuns: 100 });
  });
});
