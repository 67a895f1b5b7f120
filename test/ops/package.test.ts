import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../support/nodeRedProcess";

/** What `npm pack --dry-run --json` says of the tarball. */
interface PackReport {
  size: number;
  unpackedSize: number;
  files: { path: string; size: number }[];
}

interface PackageJson {
  main: string;
  scripts: Record<string, string>;
  "node-red": { nodes: Record<string, string>; plugins: Record<string, string> };
}

/** a user's `npm install` of the tarball runs (and npm 11 warns about) each of these */
const INSTALL_SCRIPTS = ["preinstall", "install", "postinstall", "prepare"];
/** the packed tarball's bound: what a user downloads to install the nodes */
const MAX_PACKED_BYTES = 350_000;

/**
 * The tarball users install, as npm would pack it from the tree `npm test`
 * just built (scripts skipped: the files list and the bounds do not depend
 * on them): nothing it runs at install, no source map of TypeScript it does
 * not ship, every file Node-RED loads, the license, and its size.
 */
describe("the packed package [package]", function () {
  this.timeout(60_000);
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as PackageJson;
  let report: PackReport;

  before(() => {
    const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    [report] = JSON.parse(out) as PackReport[];
    assert.ok(report, out);
  });

  it("runs no script when a user installs it, so npm 11 has nothing to warn about", () => {
    assert.deepEqual(INSTALL_SCRIPTS.filter((s) => s in pkg.scripts), []);
    assert.equal(existsSync(join(ROOT, "binding.gyp")), false, "a binding.gyp makes npm run node-gyp at install");
  });

  it("ships no source map: the TypeScript they point at is not in it", () => {
    assert.deepEqual(report.files.map((f) => f.path).filter((p) => p.endsWith(".map")), []);
  });

  it("ships every file Node-RED loads, the editor bundle, the Lua scripts and the license", () => {
    const paths = new Set(report.files.map((f) => f.path));
    const needed = [pkg.main, ...Object.values(pkg["node-red"].nodes), ...Object.values(pkg["node-red"].plugins),
      "resources/sendgate-editor.js", "lua/caps/claim.lua", "LICENSE", "README.md", "package.json"];
    assert.deepEqual(needed.filter((p) => !paths.has(p)), []);
    assert.match(readFileSync(join(ROOT, "LICENSE"), "utf8"), /Apache License\s+Version 2\.0, January 2004/);
    assert.deepEqual(report.files.map((f) => f.path).filter((p) => /^(dist\/test|dist\/bench|src|test)\//.test(p)), []);
  });

  it(`packs to at most ${MAX_PACKED_BYTES} bytes`, () => {
    assert.ok(report.size <= MAX_PACKED_BYTES, `packed ${report.size} bytes (unpacked ${report.unpackedSize})`);
  });
});
