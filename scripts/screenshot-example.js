#!/usr/bin/env node
"use strict";
/**
 * Renders an example of examples/ in the Node-RED editor, in headless
 * Chromium, and saves the canvas as a PNG for the README:
 *
 *     npm run build && node scripts/screenshot-example.js push-governor
 *     node scripts/screenshot-example.js quiet-hours /tmp/quiet.png
 *
 * Node-RED runs on a free loopback port with a throw-away user dir and this
 * package loaded through `nodesDir`, the example as its only flow (as the
 * test suite loads it). The injects of PRESSES are pressed first, as a
 * person following the example's steps would, so the picture shows the
 * gates' statuses and the debug counters. The palette and the sidebar are
 * hidden, so the picture is the flow alone; the script says so when a node
 * runs past the canvas a 1,600-px editor shows with them open (FIT), which
 * every example must fit. Not part of `npm test`.
 *
 * Chromium: /usr/bin/chromium (Debian's), or CHROMIUM_PATH.
 */
const fs = require("fs");
const os = require("os");
const net = require("net");
const path = require("path");
const { spawn } = require("child_process");

const root = path.resolve(__dirname, "..");
const WIDTH = 1600;
/** The canvas of a 1,600-px editor beside its palette (180 px) and sidebar (315 px and an 8-px separator). */
const FIT = WIDTH - 180 - 315 - 8;
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

/** What to press before the picture, per example: [inject name, times], in the order of its steps. */
const PRESSES = {
    "admission-chain": [
        ["marketing SMS to alice", 1],
        ["same body again, keys reordered", 1],
        ["marketing SMS the provider FAILs", 1],
        ["new marketing SMS to alice", 3],
        ["bob texts STOP", 1],
        ["marketing SMS to bob", 1],
        ["bob opts back in", 1],
        ["marketing SMS to bob", 1],
        ["send without recipient", 1],
    ],
    "push-governor": [
        ["P2 price-drop to alice", 3],
        ["P2 back-in-stock to alice", 2],
        ["P1 order shipped to alice", 2],
        ["P0 passcode to alice", 1],
        ["P3 digest item to bob", 3],
        ["P2 price-drop to carol (wants 1)", 2],
        ["P2 price-drop to dan (asks for 5)", 3],
        ["P1 reminder to aiko (Tokyo)", 1],
        ["P1 reminder to ngozi (Lagos)", 1],
        ["P1 reminder to pat (Phoenix)", 1],
        ["push without a tier", 1],
    ],
    "quiet-hours": [
        ["push to aiko (Tokyo)", 1],
        ["push to ngozi (Lagos)", 1],
        ["push to pat (Phoenix)", 1],
        ["push to sam (quiet this minute)", 1],
        ["OTP to sam (exempt)", 1],
        ["push to Mars/Olympus", 1],
    ],
};
/** How long to wait after the presses, per example: push-governor's collapsed digest leaves 20 s after the first. */
const SETTLE_MS = { "push-governor": 22_000 };

function fail(text) {
    console.error(`screenshot-example: ${text}`);
    process.exit(1);
}

function freePort() {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => {
            const { port } = server.address();
            server.close(() => resolve(port));
        });
    });
}

async function startNodeRed(flowFile, port) {
    const userDir = fs.mkdtempSync(path.join(os.tmpdir(), "sendgate-shot-"));
    fs.copyFileSync(flowFile, path.join(userDir, "flows.json"));
    const settings = {
        uiHost: "127.0.0.1", uiPort: port, flowFile: "flows.json", nodesDir: [root],
        telemetry: { enabled: false }, editorTheme: { projects: { enabled: false }, tours: false },
        logging: { console: { level: "info" } },
    };
    const settingsFile = path.join(userDir, "settings.js");
    fs.writeFileSync(settingsFile, `module.exports = ${JSON.stringify(settings)};\n`);
    const red = require.resolve("node-red/red.js", { paths: [root] });
    const child = spawn(process.execPath, [red, "-u", userDir, "-s", settingsFile], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => { output += d; });
    child.stderr.on("data", (d) => { output += d; });
    const started = Date.now();
    while (!output.includes("Started flows")) {
        if (child.exitCode !== null) throw new Error(`Node-RED exited:\n${output}`);
        if (Date.now() - started > 60_000) {
            child.kill("SIGKILL");
            throw new Error(`Node-RED did not start:\n${output}`);
        }
        await new Promise((r) => setTimeout(r, 100));
    }
    return {
        output: () => output,
        async stop() {
            if (child.exitCode === null) {
                const exited = new Promise((r) => child.once("exit", r));
                child.kill("SIGTERM");
                await exited;
            }
            fs.rmSync(userDir, { recursive: true, force: true });
        },
    };
}

async function main() {
    const name = (process.argv[2] || "push-governor").replace(/\.json$/, "");
    const flowFile = path.join(root, "examples", `${name}.json`);
    if (!fs.existsSync(flowFile)) fail(`no example ${path.relative(root, flowFile)}`);
    if (!fs.existsSync(path.join(root, "dist", ".built"))) fail("build first: npm run build");
    if (!fs.existsSync(CHROMIUM)) fail(`no Chromium at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_PATH`);
    const target = path.resolve(process.argv[3] || path.join(root, "docs", `${name}.png`));
    const flow = JSON.parse(fs.readFileSync(flowFile, "utf8"));
    const tab = flow.find((n) => n.type === "tab");

    const { chromium } = require("playwright-core");
    const port = await freePort();
    const red = await startNodeRed(flowFile, port);
    let browser;
    try {
        browser = await chromium.launch({
            executablePath: CHROMIUM,
            args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-quic"],
        });
        const page = await browser.newPage({ viewport: { width: WIDTH, height: 1200 } });
        await page.goto(`http://127.0.0.1:${port}/`);
        await page.waitForSelector(".red-ui-flow-node", { timeout: 60_000 });
        // the workspace alone, as wide as the viewport: no palette, no sidebar
        await page.evaluate(() => {
            RED.menu.setSelected("menu-item-palette", false);
            RED.menu.setSelected("menu-item-sidebar", false);
        });
        await page.waitForTimeout(500);

        for (const [inject, times] of PRESSES[name] || []) {
            const node = flow.find((n) => n.type === "inject" && n.name === inject);
            if (!node) throw new Error(`${name} has no inject named "${inject}"`);
            for (let i = 0; i < times; i++) {
                await page.click(`[id='${node.id}'] .red-ui-flow-node-button`);
                await page.waitForTimeout(300);
            }
        }
        // the statuses and counters come over the websocket; the "Successfully injected" notices must go
        await page.waitForTimeout(SETTLE_MS[name] ?? 2500);
        await page.evaluate(() => document.querySelectorAll(".red-ui-notification").forEach((e) => e.remove()));

        // where the nodes are, as the editor laid them out (its own widths)
        const bounds = await page.evaluate((tabId) => {
            const nodes = RED.nodes.filterNodes({ z: tabId });
            return nodes.map((n) => ({ id: n.id, w: n.w, name: n.name || n.type, type: n.type, left: n.x - n.w / 2, right: n.x + n.w / 2, bottom: n.y + n.h / 2 }));
        }, tab.id);
        const right = Math.max(...bounds.map((b) => b.right));
        const bottom = Math.max(...bounds.map((b) => b.bottom));
        // a debug node's button sticks out some 25 px past its box
        const widest = bounds.filter((b) => b.right + (b.type === "debug" ? 25 : 0) > FIT);
        if (widest.length > 0) console.error(`screenshot-example: past ${FIT} px: ${widest.map((b) => `${b.name} (${Math.round(b.right)})`).join(", ")}`);
        console.log(`screenshot-example: nodes reach x ${Math.round(right)}, y ${Math.round(bottom)}`);
        if (process.env.SHOW_WIDTHS) for (const b of bounds) console.log(`  ${b.id} ${b.w} ${b.type} ${Math.round(b.left)}..${Math.round(b.right)} ${b.name}`);

        const chart = await page.locator("#red-ui-workspace-chart").boundingBox();
        // debug buttons and statuses stick out past a node's box: a margin around the nodes
        const clip = { x: chart.x, y: chart.y, width: Math.min(chart.width, right + 40), height: Math.min(chart.height, bottom + 40) };
        fs.mkdirSync(path.dirname(target), { recursive: true });
        await page.screenshot({ path: target, clip });
        console.log(`screenshot-example: wrote ${path.relative(process.cwd(), target)} (${Math.round(clip.width)} × ${Math.round(clip.height)})`);
    } finally {
        await browser?.close();
        await red.stop();
    }
}

main().catch((err) => fail(err.stack || String(err)));
