import assert from "node:assert/strict";
import { createRulesPool, urlWithPassword } from "../../../src/postgres/pool";
import { DATABASE_URL } from "../../support/postgres";

describe("core/pgRules: the rules pool", () => {
  it("puts the pgPassword credential into a URL that has none, encoded", () => {
    const url = urlWithPassword("postgres://ops@db.internal:5432/caps", "p@ss:w/rd%");
    const parsed = new URL(url);
    assert.equal(decodeURIComponent(parsed.password), "p@ss:w/rd%");
    assert.equal(parsed.username, "ops");
    assert.equal(parsed.pathname, "/caps");
  });

  it("leaves a URL's own password, and a URL without a credential to add, as they are", () => {
    assert.equal(urlWithPassword("postgres://ops:own@db/caps", "other"), "postgres://ops:own@db/caps");
    assert.equal(urlWithPassword("postgres://ops@db/caps", undefined), "postgres://ops@db/caps");
    assert.equal(urlWithPassword("postgres://ops@db/caps", ""), "postgres://ops@db/caps");
  });

  it("connects with the credential (trust auth ignores it) and names itself to PostgreSQL", async () => {
    const pool = createRulesPool({ url: DATABASE_URL, password: "unused-under-trust" });
    try {
      const { rows } = await pool.query<{ name: string }>("SELECT current_setting('application_name') AS name");
      assert.equal(rows[0]?.name, "node-red-frequency-cap");
    } finally {
      await pool.end();
    }
  });
});
