import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../support/nodeRedProcess";
import { demoScript, exampleNames, type FlowNode } from "../support/exampleFlow";

/**
 * Every file of examples/ (whatever files are there), as Node-RED lists them
 * under Import → Examples, and the `npm start` demo beside them: each is a
 * flow on one tab whose every node has its place on it, that fits the canvas
 * of a 1,600-px-wide editor with its palette and sidebar open and is named in
 * the README; none clashes with another (ids, tab labels, HTTP paths) when
 * imported beside it or beside the demo. shape.test.ts checks the rest:
 * wiring, comments, injects that fire by themselves, the memory store;
 * test/browser/examplesFit.test.ts measures the fit in the editor itself.
 */
/** The canvas a 1,600-px window shows beside Node-RED's palette (180 px) and sidebar (315 px and its 8-px separator). */
const CANVAS_WIDTH = 1600 - 180 - 315 - 8;

/** Config node types: they live on no tab and have no place on the canvas. */
const CONFIG_TYPES = new Set(["cap-config", "mqtt-broker", "tls-config", "http proxy", "websocket-listener", "websocket-client", "global-config"]);

/**
 * A node's width as the editor draws it: max(100, 20·⌈(label + 50 + 7 if it
 * has an input) / 20⌉) px (Node-RED's view.js), its label measured at
 * `pxPerChar`. The editor's 14-px font takes 6–6.5 px a character in Chromium
 * (scripts/screenshot-example.js prints the real widths): the right edge is
 * checked at 7 px a character and the left edge at 6, so a flow that passes
 * fits with some room either side. An unnamed node is measured by its type.
 */
function width(node: FlowNode, pxPerChar: number): number {
  const label = typeof node.name === "string" && node.name !== "" ? node.name : node.type;
  const inputs = !["inject", "comment", "catch", "status", "complete", "http in", "mqtt in", "link in"].includes(node.type);
  return Math.max(100, 20 * Math.ceil(([...label].length * pxPerChar + 50 + (inputs ? 7 : 0)) / 20));
}

/** What sticks out of a node's box: the inject's button on its left, the debug's on its right. */
const BUTTON = 25;

function parse(path: string): FlowNode[] {
  const flow = JSON.parse(readFileSync(join(ROOT, path), "utf8")) as unknown;
  assert.ok(Array.isArray(flow), `${path} is not a JSON array of nodes`);
  return flow as FlowNode[];
}

const exampleFiles = exampleNames();

/** Every example file, and the demo scripts/demoFlow.js makes for `npm start`, by name. */
function catalogue(): { name: string; flow: FlowNode[] }[] {
  return [...exampleFiles.map((f) => ({ name: `examples/${f}`, flow: parse(`examples/${f}`) })), { name: "the npm start demo", flow: demoScript.demoFlow() }];
}

describe("examples/: the catalogue", () => {
  it("holds flow files only (Node-RED lists every file of examples/)", () => {
    assert.ok(exampleFiles.length > 0);
    assert.deepEqual(readdirSync(join(ROOT, "examples")).filter((f) => !f.endsWith(".json")), []);
  });

  for (const file of exampleFiles) {
    describe(file, () => {
      const path = `examples/${file}`;

      it("parses, has exactly one tab, and every flow node is on it with x and y", () => {
        const flow = parse(path);
        const tabs = flow.filter((n) => n.type === "tab");
        assert.equal(tabs.length, 1, "tabs");
        const tab = tabs[0];
        for (const node of flow) {
          assert.equal(typeof node.id, "string", `a node without id in ${path}`);
          if (node.type === "tab" || CONFIG_TYPES.has(node.type)) continue;
          assert.equal(node.z, tab.id, `${node.type} ${node.id} (${node.name ?? ""}) is not on the tab (z); if ${node.type} is a config node, add it to CONFIG_TYPES`);
          assert.ok(Number.isFinite(node.x) && Number.isFinite(node.y), `${node.type} ${node.id} (${node.name ?? ""}) has no x/y`);
        }
      });

      it(`fits the ${CANVAS_WIDTH}-px canvas of a 1,600-px editor with its palette and sidebar open`, () => {
        for (const node of parse(path)) {
          if (typeof node.x !== "number") continue;
          const left = node.x - width(node, 6) / 2 - (node.type === "inject" ? BUTTON : 0);
          const right = node.x + width(node, 7) / 2 + (node.type === "debug" ? BUTTON : 0);
          assert.ok(left >= 0, `${node.type} "${node.name ?? ""}" starts at x ${left}, left of the canvas`);
          assert.ok(right <= CANVAS_WIDTH, `${node.type} "${node.name ?? ""}" reaches x ${right} (its centre ${node.x}, some ${width(node, 7)} px wide): past ${CANVAS_WIDTH}`);
        }
      });

      it("is named in README.md", () => {
        const readme = readFileSync(join(ROOT, "README.md"), "utf8");
        const name = file.replace(/\.json$/, "");
        assert.ok(readme.includes(`\`${name}\``), `README.md does not name \`${name}\``);
      });
    });
  }

  it("gives every node an id of its own across all the examples and the demo, so none clashes when imported beside another", () => {
    const owner = new Map<string, string>();
    for (const { name, flow } of catalogue()) {
      for (const node of flow) {
        const other = owner.get(node.id);
        assert.equal(other, undefined, `id ${node.id} (${node.type} in ${name}) is also in ${other}`);
        owner.set(node.id, name);
      }
    }
  });

  it("gives every tab a label of its own, the demo's included", () => {
    const labels = catalogue().flatMap(({ flow }) => flow.filter((n) => n.type === "tab").map((t) => String(t.label)));
    assert.deepEqual(labels.filter((l, i) => labels.indexOf(l) !== i), []);
  });

  it("serves each HTTP path from one example only (and not from the demo)", () => {
    const owner = new Map<string, string>();
    for (const { name, flow } of catalogue()) {
      for (const node of flow.filter((n) => n.type === "http in")) {
        // Node-RED serves "send" as "/send", and matches paths without regard to case or a trailing slash
        const url = `/${String(node.url).replace(/^\/+|\/+$/g, "")}`.toLowerCase();
        const other = owner.get(url);
        assert.equal(other, undefined, `${name} and ${other} both serve ${url}`);
        owner.set(url, name);
      }
    }
  });
});
