import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { helper } from "./nodeRed";

/**
 * Gives a suite's Node-RED a user dir of its own (where memory stores keep
 * their state), and takes it away afterwards so later suites start empty.
 */
export function useUserDir(label: string): void {
  // made when the suite runs, not when mocha reads it: a run filtered past the suite (-g) leaves no empty dir behind
  let userDir: string | undefined;
  before(() => {
    userDir = mkdtempSync(join(tmpdir(), `sendgate-${label}-`));
    helper.settings({ userDir });
  });
  after(() => {
    helper.settings({ userDir: undefined });
    if (userDir !== undefined) rmSync(userDir, { recursive: true, force: true });
  });
}
