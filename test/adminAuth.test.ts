import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { NodeRedProcess } from "./support/nodeRedProcess";
import { parsePrometheusText, total } from "./support/promText";

/* eslint-disable @typescript-eslint/no-require-imports */
const bcrypt = require(require.resolve("bcryptjs", { paths: [dirname(require.resolve("@node-red/editor-api/package.json"))] })) as {
  hashSync(text: string, rounds: number): string;
};

const FLOW = [
  { id: "tab1", type: "tab", label: "auth" },
  { id: "caps", type: "cap-config", name: "auth test caps", store: "memory", rules: [{ id: "one", scope: "global", max_count: 1, window_seconds: 60 }] },
  { id: "gate", type: "frequency-cap-gate", z: "tab1", x: 200, y: 100, config: "caps", wires: [[], [], []] },
];

/** The admin routes' permissions, proven against a real Node-RED process with adminAuth (the test helper stubs them). */
describe("admin API permissions in a real Node-RED with adminAuth", function () {
  this.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), "sendgate-auth-"));
  const flowFile = join(dir, "flows.json");
  writeFileSync(flowFile, JSON.stringify(FLOW));
  const password = bcrypt.hashSync("secret", 8);
  const red = new NodeRedProcess(flowFile, {
    adminAuth: {
      type: "credentials",
      users: [
        { username: "admin", password, permissions: "*" },
        { username: "viewer", password, permissions: "read" },
        { username: "capreader", password, permissions: ["frequency-cap.read"] },
        // may watch flows, not read caps or their metrics
        { username: "flowreader", password, permissions: ["flows.read", "nodes.read", "status.read"] },
      ],
    },
  });

  before(() => red.start());
  after(async () => {
    await red.stop();
    red.cleanUp();
    rmSync(dir, { recursive: true, force: true });
  });

  // "" asks for every permission the user has (as the editor's login does)
  const scopes: Record<string, string> = { admin: "*", viewer: "read", capreader: "frequency-cap.read", flowreader: "" };

  async function token(username: string): Promise<string> {
    const res = await fetch(`${red.baseUrl}/auth/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_id: "node-red-admin", grant_type: "password", scope: scopes[username], username, password: "secret" }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    return ((await res.json()) as { access_token: string }).access_token;
  }

  function call(method: string, path: string, bearer?: string, body?: unknown): Promise<Response> {
    return fetch(`${red.baseUrl}${path}`, {
      method,
      headers: { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  }

  it("answers 401 without a token, on every route", async () => {
    for (const [method, path] of [["GET", "/frequency-cap/caps/caps"], ["POST", "/frequency-cap/caps/caps"], ["GET", "/frequency-cap/caps/suppressions"],
      ["POST", "/frequency-cap/caps/suppressions"], ["DELETE", "/frequency-cap/caps/suppressions"], ["GET", "/frequency-cap/caps/usage"],
      ["GET", "/frequency-cap/caps/totals"], ["PUT", "/frequency-cap/caps/caps/one"], ["DELETE", "/frequency-cap/caps/caps/one"], ["GET", "/frequency-cap/caps/metrics"],
      ["GET", "/frequency-cap/caps/held"], ["GET", "/frequency-cap/caps/held?recipient=r"], ["GET", "/frequency-cap/caps/history?recipient=r"]] as const) {
      assert.equal((await call(method, path)).status, 401, `${method} ${path}`);
    }
  });

  it("lets a read-only user read but not write", async () => {
    for (const user of ["viewer", "capreader"]) {
      const bearer = await token(user);
      assert.equal((await call("GET", "/frequency-cap/caps/caps", bearer)).status, 200, user);
      assert.equal((await call("GET", "/frequency-cap/caps/usage?recipient=r&channel=sms", bearer)).status, 200, user);
      assert.equal((await call("GET", "/frequency-cap/caps/totals", bearer)).status, 200, user);
      assert.equal((await call("GET", "/frequency-cap/caps/held", bearer)).status, 200, user);
      assert.equal((await call("GET", "/frequency-cap/caps/held?recipient=r", bearer)).status, 200, user);
      assert.equal((await call("GET", "/frequency-cap/caps/history?recipient=r", bearer)).status, 200, user);
      // Node-RED answers a missing permission with 401 (editor-api auth), not 403
      assert.equal((await call("POST", "/frequency-cap/caps/suppressions", bearer, { recipient: `by-${user}` })).status, 401, user);
      assert.equal((await call("DELETE", "/frequency-cap/caps/suppressions?recipient=r", bearer)).status, 401, user);
      assert.equal((await call("POST", "/frequency-cap/caps/caps", bearer, { id: "x" })).status, 401, user);
      const listed = await call("GET", "/frequency-cap/caps/suppressions", bearer);
      assert.deepEqual(((await listed.json()) as { entries: unknown[] }).entries, [], `${user} changed nothing`);
    }
  });

  it("serves the metrics in the Prometheus text format to frequency-cap.read, and refuses a user without it", async () => {
    for (const user of ["viewer", "capreader"]) {
      const res = await call("GET", "/frequency-cap/caps/metrics", await token(user));
      assert.equal(res.status, 200, user);
      assert.match(res.headers.get("content-type") ?? "", /^text\/plain;.*version=0\.0\.4/);
      const families = parsePrometheusText(await res.text());
      assert.equal(total(families, "sendgate_info", { config: "caps", store: "memory" }), 1, user);
    }
    const refused = await call("GET", "/frequency-cap/caps/metrics", await token("flowreader"));
    assert.equal(refused.status, 401, "no frequency-cap.read, no metrics");
    assert.equal((await call("GET", "/frequency-cap/caps/usage?recipient=r&channel=sms", await token("flowreader"))).status, 401);
    assert.equal((await call("GET", "/frequency-cap/caps/totals", await token("flowreader"))).status, 401);
    assert.equal((await call("GET", "/frequency-cap/caps/held?recipient=r", await token("flowreader"))).status, 401, "no frequency-cap.read, no held msgs");
    assert.equal((await call("GET", "/frequency-cap/caps/history?recipient=r", await token("flowreader"))).status, 401, "no frequency-cap.read, no history");
    assert.equal((await call("GET", "/frequency-cap/nope/metrics", await token("capreader"))).status, 404, "an unknown cap-config");
  });

  it("lets a user with write permission write", async () => {
    const bearer = await token("admin");
    const created = await call("POST", "/frequency-cap/caps/suppressions", bearer, { recipient: "r", reason: "STOP" });
    assert.equal(created.status, 201, `${await created.text()}\n${red.output}`);
    const listed = await call("GET", "/frequency-cap/caps/suppressions", bearer);
    assert.equal(((await listed.json()) as { entries: unknown[] }).entries.length, 1);
    assert.equal((await call("POST", "/frequency-cap/caps/caps", bearer, { id: "x" })).status, 409, "inline rules refuse API writes");
  });
});
