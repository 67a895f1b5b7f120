"use strict";
/**
 * The flow `npm start` deploys into a new flow file (scripts/start.js):
 * scripts/demo-flow.json, every gate of the package in one chain (opt-outs,
 * caps, quiet hours, a provider's pace), on a tab labelled "Sendgate demo".
 * It is none of the examples: Node-RED lists every file of examples/ under
 * Import → Examples, and a demo that was one of them came back as a second,
 * identical tab when that example was imported. Every id gets the prefix
 * "demo-", and so does every reference to one (z, wires, config, scope,
 * links: any property but a text (name, label, info) whose value, or an
 * element of whose array value at any depth, is an id of the flow), so no id
 * of the demo can be an example's. Its config nodes' names start with
 * "sendgate " so the config sidebar tells them from the examples'. Plain
 * CommonJS: start.js requires it, and so does the test suite
 * (test/examples/demo.test.ts).
 */
const fs = require("fs");
const path = require("path");

const SOURCE = path.join(__dirname, "demo-flow.json");
const ID_PREFIX = "demo-";
const LABEL = "Sendgate demo";

/** Properties that hold text for people, never a reference. */
const TEXTS = new Set(["name", "label", "info"]);

/** `value` with every id of `ids` in it (itself, or in an array at any depth) given the demo's prefix. */
function remap(value, ids) {
    if (typeof value === "string") return ids.has(value) ? ID_PREFIX + value : value;
    if (Array.isArray(value)) return value.map((v) => remap(v, ids));
    return value;
}

/** The demo flow, made from `source` (the parsed scripts/demo-flow.json unless given); `source` is left as it is. */
function demoFlow(source = JSON.parse(fs.readFileSync(SOURCE, "utf8"))) {
    const ids = new Set(source.map((n) => n.id));
    return source.map((node) => {
        const copy = {};
        for (const [key, value] of Object.entries(node)) copy[key] = key === "id" ? ID_PREFIX + value : TEXTS.has(key) ? value : remap(value, ids);
        if (copy.type === "tab") {
            copy.label = LABEL;
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

module.exports = { demoFlow, seedFlowFile, SOURCE, ID_PREFIX, LABEL };
