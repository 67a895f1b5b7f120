import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./nodeRedProcess";

/** A node of an example file, as the file has it. */
export interface FlowNode {
  id: string;
  type: string;
  z?: string;
  name?: string;
  x?: number;
  y?: number;
  wires?: string[][];
  [property: string]: unknown;
}

export function exampleFile(name: string): string {
  return join(ROOT, "examples", name);
}

/** Every example file's name (what Import → Examples lists). */
export function exampleNames(): string[] {
  return readdirSync(join(ROOT, "examples")).filter((f) => f.endsWith(".json")).sort();
}

/** The example exactly as shipped. */
export function readExample(name: string): FlowNode[] {
  return JSON.parse(readFileSync(exampleFile(name), "utf8")) as FlowNode[];
}

/** scripts/demoFlow.js, which makes the `npm start` demo from scripts/demo-flow.json. */
export interface DemoFlowScript {
  /** the demo flow, made from `source` (scripts/demo-flow.json unless given) */
  demoFlow(source?: readonly FlowNode[]): FlowNode[];
  /** the path of scripts/demo-flow.json */
  SOURCE: string;
  /** writes the demo flow to `flowFile` unless it exists; true when it wrote it */
  seedFlowFile(flowFile: string): boolean;
  /** the prefix of every id of the demo */
  ID_PREFIX: string;
  /** the demo's tab label */
  LABEL: string;
}

/** The script itself, from the repo: it is plain JS, which the build does not copy into dist/. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const demoScript = require(join(ROOT, "scripts", "demoFlow.js")) as DemoFlowScript;

/** The one node of `type` named `name`. */
export function nodeNamed(flow: readonly FlowNode[], type: string, name: string): FlowNode {
  const found = flow.filter((n) => n.type === type && n.name === name);
  assert.equal(found.length, 1, `example has ${found.length} ${type} nodes named "${name}"`);
  return found[0];
}

/** The one node of `type`. */
export function onlyNode(flow: readonly FlowNode[], type: string): FlowNode {
  const found = flow.filter((n) => n.type === type);
  assert.equal(found.length, 1, `example has ${found.length} ${type} nodes`);
  return found[0];
}
