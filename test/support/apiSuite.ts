import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { helper } from "./nodeRed";
import { uniquePrefix } from "./redis";
import type { SuiteStore } from "./suiteStore";

/**
 * The hooks of an admin-API suite on one store: Node-RED's test server for
 * the suite, and per test a key prefix of its own and a user dir of its own
 * (the memory store keeps its counters and held msgs there, under the
 * cap-config's id), both removed after it. Call inside the describe, after
 * `store.hooks()`; the result reads the current test's key prefix.
 */
export function apiSuiteHooks(store: SuiteStore, tag: string): () => string {
  let keyPrefix = "";
  let userDir: string | undefined;
  before(() => helper.startServer());
  after(() => helper.stopServer());
  beforeEach(() => {
    keyPrefix = uniquePrefix(`${tag}-${store.kind}`);
    userDir = mkdtempSync(join(tmpdir(), `sendgate-${tag}-`));
    helper.settings({ userDir });
  });
  afterEach(async () => {
    await helper.unload();
    await store.drop(keyPrefix);
    helper.settings({ userDir: undefined });
    if (userDir !== undefined) rmSync(userDir, { recursive: true, force: true });
  });
  return () => keyPrefix;
}
