"use strict";
/**
 * The flow `npm start` deploys into a new flow file (scripts/start.js):
 * examples/frequency-cap-demo.json itself, so the two cannot drift apart, on
 * a tab labelled "Sendgate demo" with ids of its own. Every id gets the
 * prefix "demo-", and so does every reference to one (z, wires, config,
 * scope, links: any property but a text (name, label, info) whose value, or
 * an element of whose array value at any depth, is an id of the flow), so
 * importing any example beside the demo,
 * frequency-cap-demo included, clashes with nothing. Its config nodes'
 * names start with "sendgate " so the config sidebar tells them from the
 * example's. Plain CommonJS: start.js requires it, and so does the test
 * suite (test/examples/demo.test.ts).
 */
const fs = require("fs");
const path = require("path");

const EXAMPLE = path.join(__dirname, "..", "examples", "frequency-cap-demo.json");
const ID_PREFIX = "demo-";
const LABEL = "Sendgate demo";
const INFO = "This is the flow `npm start` deploys, made from examples/frequency-cap-demo.json by scripts/demoFlow.js "
    + "on a tab, with ids and a cap-config of its own: the importable examples (Menu → Import → Examples → "
    + "@sendgate/node-red-frequency-cap), frequency-cap-demo included, can each be imported beside it.";

/** Properties that hold text for people, never a reference. */
const TEXTS = new Set(["name", "label", "info"]);

/** `value` with every id of `ids` in it (itself, or in an array at any depth) given the demo's prefix. */
function remap(value, ids) {
    if (typeof value === "string") return ids.has(value) ? ID_PREFIX + value : value;
    if (Array.isArray(value)) return value.map((v) => remap(v, ids));
    return value;
}

/** The demo flow, made from `example` (the parsed frequency-cap-demo.json unless given); `example` is left as it is. */
function demoFlow(example = JSON.parse(fs.readFileSync(EXAMPLE, "utf8"))) {
    const ids = new Set(example.map((n) => n.id));
    return example.map((node) => {
        const copy = {};
        for (const [key, value] of Object.entries(node)) copy[key] = key === "id" ? ID_PREFIX + value : TEXTS.has(key) ? value : remap(value, ids);
        if (copy.type === "tab") {
            copy.label = LABEL;
            copy.info = [copy.info, INFO].filter(Boolean).join("\n\n");
        } else if (copy.x === undefined && typeof copy.name === "string" && copy.name !== "") {
            copy.name = `sendgate ${copy.name}`;
        }
        return copy;
    });
}

/** Writes the demo flow to `flowFile` unless that file exists; true when it wrote it. */
function seedFlowFile(flowFile) {
    if (fs.existsSync(flowFile)) return false;
    fs.writeFileSync(flowFile, `${JSON.stringify(demoFlow(), null, 4)}\n`, { flag: "wx" });
    return true;
}

module.exports = { demoFlow, seedFlowFile, EXAMPLE, ID_PREFIX, LABEL };
