import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { helper } from "./nodeRed";

/**
 * Gives a suite's Node-RED a user dir of its own (where memory stores keep
 * their state), and takes it away afterwards so later suites start empty.
 */
export function useUserDir(label: string): void {
  const userDir = mkdtempSync(join(tmpdir(), `sendgate-${label}-`));
  before(() => { helper.settings({ userDir }); });
  after(() => {
    helper.settings({ userDir: undefined });
    rmSync(userDir, { recursive: true, force: true });
  });
}
