import assert from "node:assert/strict";
import { exampleNames, readExample, type FlowNode } from "../support/exampleFlow";

/**
 * What every file of examples/ must be so that importing it next to what is
 * already deployed (and next to the other examples) collides with nothing:
 * one tab of its own, ids unique across every file, HTTP routes unique, its
 * steps on the canvas (numbered, beside where a person starts each), nothing
 * firing by itself, no store to install.
 */
const files = exampleNames().map((name) => ({ name, flow: readExample(name) }));

const isFlowNode = (n: FlowNode) => n.type !== "tab" && typeof n.x === "number";

/** Where a person starts each step: a button to press, a URL to call, a topic to publish to. */
const ENTRY_TYPES = new Set(["inject", "http in", "mqtt in"]);
/** How far above its entry point a step's comment may stand: two continuation lines. */
const STEP_REACH = 80;

/** A node's step number: its name begins with ① … ⑳ (a step comment, or an inject named after its step). */
function stepNumber(n: FlowNode): number | undefined {
  const first = typeof n.name === "string" ? n.name.trimStart().codePointAt(0) : undefined;
  return first !== undefined && first >= 0x2460 && first <= 0x2473 ? first - 0x245f : undefined;
}

describe("examples/: every file", () => {
  it("is found", () => {
    assert.ok(files.length >= 3, files.map((f) => f.name).join(", "));
  });

  it("has one tab, and every node on it (a config node may be global)", () => {
    for (const { name, flow } of files) {
      const tabs = flow.filter((n) => n.type === "tab");
      assert.equal(tabs.length, 1, `${name}: tabs`);
      const tab = tabs[0]?.id;
      for (const n of flow.filter((f) => f.type !== "tab")) {
        if (isFlowNode(n)) {
          assert.equal(n.z, tab, `${name}: ${n.type} ${n.id} is not on the tab`);
          assert.ok(typeof n.y === "number" && (n.x as number) >= 0 && n.y >= 0, `${name}: ${n.type} ${n.id} has no place on the canvas`);
        } else {
          assert.ok(n.z === undefined || n.z === tab, `${name}: config node ${n.id} belongs to another tab`);
        }
      }
    }
  });

  it("has ids no other file uses", () => {
    const seen = new Map<string, string>();
    for (const { name, flow } of files) {
      for (const n of flow) {
        const other = seen.get(n.id);
        assert.equal(other, undefined, `${n.id} (${n.type}) in ${name} is also in ${other}`);
        seen.set(n.id, name);
      }
    }
  });

  it("wires only to nodes of its own", () => {
    for (const { name, flow } of files) {
      const ids = new Set(flow.map((n) => n.id));
      for (const n of flow) {
        for (const target of (n.wires ?? []).flat()) assert.ok(ids.has(target), `${name}: ${n.id} wires to ${target}`);
        for (const target of Array.isArray(n.scope) ? n.scope as string[] : []) assert.ok(ids.has(target), `${name}: ${n.id} watches ${target}`);
      }
    }
  });

  it("serves HTTP routes no other example serves", () => {
    const seen = new Map<string, string>();
    for (const { name, flow } of files) {
      for (const n of flow.filter((f) => f.type === "http in")) {
        const route = `${String(n.method).toUpperCase()} ${String(n.url)}`;
        assert.equal(seen.get(route), undefined, `${route} in ${name} and ${seen.get(route)}`);
        seen.set(route, name);
      }
    }
  });

  it("explains itself on the canvas, and fires nothing by itself", () => {
    for (const { name, flow } of files) {
      assert.ok(flow.some((n) => n.type === "comment" && isFlowNode(n) && String(n.name).trim() !== ""), `${name}: no comment on the canvas`);
      for (const n of flow.filter((f) => f.type === "inject")) {
        assert.ok(n.once !== true && !n.repeat && !n.crontab, `${name}: inject "${n.name}" fires by itself`);
      }
    }
  });

  it("numbers its steps ①, ②, … on the canvas, one on the row of every inject and HTTP or MQTT entry point or just above it", () => {
    for (const { name, flow } of files) {
      const steps = flow.filter((n) => isFlowNode(n) && stepNumber(n) !== undefined);
      const numbers = [...new Set(steps.map((n) => stepNumber(n) as number))].sort((a, b) => a - b);
      assert.ok(numbers.length > 0, `${name}: no numbered step on the canvas`);
      assert.deepEqual(numbers, numbers.map((_, i) => i + 1), `${name}: steps ${numbers.join(", ")}`);
      for (const entry of flow.filter((n) => ENTRY_TYPES.has(n.type))) {
        const y = entry.y as number;
        const step = steps.find((s) => (s.y as number) <= y && y - (s.y as number) <= STEP_REACH);
        assert.ok(step, `${name}: no numbered step on the row of ${entry.type} "${entry.name || String(entry.url ?? entry.topic ?? entry.id)}" or up to ${STEP_REACH} px above it`);
      }
    }
  });

  it("says what it needs, on the canvas and first in its tab's info", () => {
    for (const { name, flow } of files) {
      const needs = flow.filter((n) => n.type === "comment" && isFlowNode(n) && /^Needs\b/.test(String(n.name)));
      assert.equal(needs.length, 1, `${name}: one comment on the canvas starting "Needs"`);
      const info = String(flow.find((n) => n.type === "tab")?.info ?? "");
      assert.match(info, /^\*\*Needs\b/, `${name}: the tab's info starts with what it needs`);
      // the topmost node, where a person starts reading
      const top = Math.min(...flow.filter(isFlowNode).map((n) => n.y as number));
      assert.equal(needs[0]?.y, top, `${name}: the Needs comment is the top row`);
    }
  });

  it("reaches Node-RED through $NODE_RED, set on one line, so another host or port is one change; names a broker's address where it needs one", () => {
    for (const { name, flow } of files) {
      const exportLines = flow.filter((n) => n.type === "comment" && /^export NODE_RED=http:\/\/127\.0\.0\.1:1880$/.test(String(n.name)));
      // the export line and its info are where the address is written
      const texts = flow.filter((n) => !exportLines.includes(n)).flatMap((n) => [n.name, n.info]).filter((t): t is string => typeof t === "string");
      const commands = texts.filter((t) => /\bcurl\b/.test(t));
      for (const text of texts) {
        const fixed = text.replace(/export NODE_RED=http:\/\/127\.0\.0\.1:1880/g, "");
        assert.doesNotMatch(fixed, /127\.0\.0\.1:1880|localhost:1880/, `${name}: an address of Node-RED outside the export line: ${text.slice(0, 120)}`);
      }
      // a command: `curl …` at the start of a line or of a code span
      for (const text of commands) {
        for (const [, command] of text.matchAll(/(?:^|`)\s*(curl\s[^`\n]*)/gm)) {
          assert.match(String(command), /"\$NODE_RED\/[^"\s]*"/, `${name}: a curl command that does not reach "$NODE_RED/…": ${String(command)}`);
        }
      }
      assert.equal(exportLines.length, commands.length > 0 ? 1 : 0, `${name}: one "export NODE_RED=…" comment on the canvas when it has curl lines`);
      const needs = String(flow.find((n) => n.type === "comment" && /^Needs\b/.test(String(n.name)))?.name);
      for (const broker of flow.filter((n) => n.type === "mqtt-broker")) {
        assert.ok(needs.includes(`${String(broker.broker)}:${String(broker.port)}`), `${name}: the Needs comment names the broker ${String(broker.broker)}:${String(broker.port)}`);
      }
    }
  });

  it("runs on the embedded memory store with inline rules", () => {
    for (const { name, flow } of files) {
      const configs = flow.filter((n) => n.type === "cap-config");
      assert.ok(configs.length >= 1, `${name}: no cap-config`);
      for (const c of configs) assert.deepEqual([c.store, c.rulesSource ?? "inline"], ["memory", "inline"], `${name}: ${c.id}`);
    }
  });
});
