#!/usr/bin/env node
"use strict";
/**
 * `npm run build`: the runtime and the tests (tsc → dist/), then the editor
 * (src/editor, type-checked by tsc and bundled by esbuild with the schema code
 * it shares with the runtime → resources/sendgate-editor.js, which every node's
 * HTML loads; and the Admission sidebar, src/editor/sidebar →
 * resources/admission-sidebar.js, which plugins/admission-sidebar.html
 * loads). Ends by writing dist/.built, which `npm start` compares with the
 * sources to build only when something changed.
 *
 * `--no-source-maps` (what `npm pack` and `npm publish` run, through
 * `prepack`): no .map files and no sourceMappingURL comments, since the
 * TypeScript they point at is not in the package. Every other build keeps
 * them, for debugging here.
 */
const { execFileSync } = require("child_process");
const fs = require("fs");
const path = require("path");

const root = path.resolve(__dirname, "..");
const tsc = require.resolve("typescript/bin/tsc", { paths: [root] });
const sourceMaps = !process.argv.includes("--no-source-maps");

function run(args) {
    execFileSync(process.execPath, [tsc, ...args], { cwd: root, stdio: "inherit" });
}

function main() {
    fs.rmSync(path.join(root, "dist"), { recursive: true, force: true });
    // a map left by an earlier build would describe a bundle it no longer matches
    fs.rmSync(path.join(root, "resources", "sendgate-editor.js.map"), { force: true });
    run(["-p", "tsconfig.json", ...(sourceMaps ? [] : ["--sourceMap", "false"])]);
    run(["-p", "tsconfig.editor.json"]);
    const bundle = (entry, outfile) => require("esbuild").buildSync({
        absWorkingDir: root,
        entryPoints: [entry],
        bundle: true,
        format: "iife",
        platform: "browser",
        target: "es2019",
        minify: true,
        sourcemap: sourceMaps,
        legalComments: "none",
        outfile,
        loader: { ".css": "text" },
        logLevel: "warning",
    });
    bundle("src/editor/ui/index.ts", "resources/sendgate-editor.js");
    bundle("src/editor/sidebar/index.ts", "resources/admission-sidebar.js");
    fs.writeFileSync(path.join(root, "dist", ".built"), `${new Date().toISOString()}\n`);
}

main();
