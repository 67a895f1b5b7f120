#!/usr/bin/env node
"use strict";
/**
 * `npm start`: Node-RED on 127.0.0.1:1880 with this package and the demo
 * flow loaded, on the embedded memory store: no Redis, no PostgreSQL (SPEC §10).
 *
 * - builds first when nothing is built yet (`npm ci` builds nothing: the
 *   package has no install-time script) or a source is newer than the last build;
 * - user dir: `.node-red-user/` in the repo (gitignored), or `SENDGATE_USER_DIR`;
 * - the package is loaded in place through Node-RED's `nodesDir` setting, which
 *   accepts the directory of a Node-RED module: edits show after a rebuild and
 *   a restart, with no npm install, no symlink and no copy;
 * - when there is no flow file yet, it gets the demo flow: every gate in one
 *   chain (scripts/demo-flow.json), on a tab with ids and a cap-config of its
 *   own (scripts/demoFlow.js); it is none of the examples, so any example can
 *   be imported beside it without a clash or a copy; after that the flows you
 *   deploy are kept;
 * - `PORT` changes the port, `HOST` the address (default 127.0.0.1: the editor
 *   has no login, so it is not exposed to the network unless you ask).
 */
const fs = require("fs");
const path = require("path");
const { spawn, spawnSync } = require("child_process");
const { seedFlowFile } = require("./demoFlow");

const root = path.resolve(__dirname, "..");
const userDir = process.env.SENDGATE_USER_DIR ? path.resolve(process.env.SENDGATE_USER_DIR) : path.join(root, ".node-red-user");
const flowFile = path.join(userDir, "flows.json");
const settingsFile = path.join(userDir, "start-settings.js");
const buildStamp = path.join(root, "dist", ".built");
const editorBundle = path.join(root, "resources", "sendgate-editor.js");
/** what the build reads: a change to any of them makes the next start rebuild */
const buildInputs = ["src", "scripts/build.js", "tsconfig.json", "tsconfig.editor.json", "package-lock.json"];

function fail(text) {
    console.error(`start: ${text}`);
    process.exit(1);
}

function port() {
    if (process.env.PORT === undefined || process.env.PORT === "") return 1880;
    const n = Number(process.env.PORT);
    if (!Number.isInteger(n) || n < 1 || n > 65535) fail(`PORT must be a port number, got ${JSON.stringify(process.env.PORT)}`);
    return n;
}

function nodeRedScript() {
    try {
        return require.resolve("node-red/red.js", { paths: [root] });
    } catch (err) {
        return fail("node-red is not installed: run `npm ci` first");
    }
}

function writeSettings(uiHost, uiPort) {
    const settings = {
        uiHost,
        uiPort,
        flowFile: "flows.json",
        flowFilePretty: true,
        nodesDir: [root],
        telemetry: { enabled: false },
        editorTheme: { projects: { enabled: false }, tours: false },
        logging: { console: { level: "info", metrics: false, audit: false } },
    };
    const text = [
        "// Written by scripts/start.js on every start: edit that script, not this file.",
        `module.exports = ${JSON.stringify(settings, null, 4)};`,
        "",
    ].join("\n");
    fs.writeFileSync(settingsFile, text);
}

/** The newest modification time under `entry` (a file or a folder). */
function newest(entry) {
    const stat = fs.statSync(entry, { throwIfNoEntry: false });
    if (!stat) return 0;
    if (!stat.isDirectory()) return stat.mtimeMs;
    return fs.readdirSync(entry).reduce((latest, name) => Math.max(latest, newest(path.join(entry, name))), stat.mtimeMs);
}

function buildIfStale() {
    const built = fs.existsSync(editorBundle) ? newest(buildStamp) : 0;
    const changed = Math.max(...buildInputs.map((entry) => newest(path.join(root, entry))));
    if (built >= changed) return;
    console.log(built === 0 ? "start: building the package" : "start: sources changed since the last build: building");
    const result = spawnSync(process.execPath, [path.join(root, "scripts", "build.js")], { cwd: root, stdio: "inherit" });
    if (result.status !== 0) fail("the build failed");
}

function main() {
    buildIfStale();
    const red = nodeRedScript();
    const uiHost = process.env.HOST || "127.0.0.1";
    const uiPort = port();

    fs.mkdirSync(userDir, { recursive: true });
    writeSettings(uiHost, uiPort);
    if (seedFlowFile(flowFile)) {
        console.log(`start: loaded the demo flow (scripts/demo-flow.json, every gate in one chain) into ${path.relative(root, flowFile)}`);
    } else {
        console.log(`start: keeping the flows in ${path.relative(root, flowFile)} (delete it to get the demo flow back)`);
    }
    console.log(`start: Node-RED editor at http://${uiHost}:${uiPort}/`);

    const child = spawn(process.execPath, [red, "-u", userDir, "-s", settingsFile], { cwd: root, stdio: "inherit" });

    // Ctrl-C reaches Node-RED too (same process group): wait for it to stop
    // cleanly. A signal sent to this process alone is passed on.
    let stopping = false;
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
        process.on(signal, () => {
            if (!stopping && child.exitCode === null) child.kill(signal);
            stopping = true;
        });
    }
    child.on("error", (err) => fail(`could not run Node-RED: ${err.message}`));
    child.on("exit", (code, signal) => {
        if (signal) process.exit(signal === "SIGINT" || signal === "SIGTERM" ? 0 : 1);
        process.exit(code === null ? 1 : code);
    });
}

main();
