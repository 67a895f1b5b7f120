#!/usr/bin/env node
"use strict";
/**
 * `npm run validate`: checks the package the way the Node-RED catalogue does
 * (node-red-dev validate, a dev dependency, so nothing is downloaded by npx),
 * with scripts/offline-catalogue.js preloaded by its absolute path: the tool
 * asks catalogue.nodered.org about look-alike names and stops at the first
 * request that fails, and the preload answers that one address with an empty
 * catalogue. The npm registry is still asked (dependency versions, names).
 *
 * Exits 1 when the tool fails (a non-zero exit, no scorecard written) or when
 * a check the catalogue calls a MUST fails; the other checks (SHOULDs, such as
 * "a dependency is not at its latest version") are printed as warnings and
 * allowed, since they change with what is published on the day.
 */
const { spawnSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const root = path.resolve(__dirname, "..");
/**
 * node-red-dev's scorecard keys for its MUST checks. The third, the node-red
 * keyword (P05), is only warned about by node-red-dev 0.1.6, whose scorecard
 * marks it passed either way: this script reads the keywords itself.
 */
const MUST = { P01: "a license", P03: "a repository or bugs link" };

function main() {
    const bin = require.resolve("node-red-dev/bin/run", { paths: [root] });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sendgate-validate-"));
    const scorecardFile = path.join(dir, "scorecard.json");
    try {
        const result = spawnSync(process.execPath, [
            "--require", path.join(root, "scripts", "offline-catalogue.js"),
            bin, "validate", "--path", root, "--output", scorecardFile,
        ], { cwd: root, stdio: "inherit" });
        if (result.error) return fail(`could not run node-red-dev: ${result.error.message}`);
        if (result.status !== 0) return fail(`node-red-dev exited with ${result.status ?? result.signal}`);
        if (!fs.existsSync(scorecardFile)) return fail("node-red-dev wrote no scorecard: it stopped before the end");
        const scorecard = JSON.parse(fs.readFileSync(scorecardFile, "utf8"));
        const failed = Object.entries(MUST).filter(([key]) => !scorecard[key] || scorecard[key].test !== true);
        const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
        if (!(pkg.keywords || []).includes("node-red")) failed.push(["P05", "the node-red keyword in keywords"]);
        if (failed.length > 0) return fail(`failed: ${failed.map(([key, what]) => `${key} (${what})`).join(", ")}`);
        const warned = Object.keys(scorecard).filter((key) => scorecard[key] && scorecard[key].test === false);
        console.log(`validate: every MUST check passed${warned.length ? `; warnings: ${warned.join(", ")}` : ""}`);
        return 0;
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

function fail(text) {
    console.error(`validate: ${text}`);
    return 1;
}

process.exitCode = main();
