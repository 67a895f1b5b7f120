import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EditorComms } from "../support/editorComms";
import { helperSuite } from "../support/helperSuite";
import { NodeRedProcess, ROOT } from "../support/nodeRedProcess";
import { admissionOf, ExampleRun } from "../support/exampleRun";
import { readExample, type FlowNode } from "../support/exampleFlow";
import { demoScript } from "../support/exampleFlow";

/**
 * The flow `npm start` deploys into a new flow file (scripts/start.js), made
 * by scripts/demoFlow.js from scripts/demo-flow.json: every gate in one
 * chain, with ids of its own, what its numbered steps say, and that every
 * example of examples/ can be imported beside it, none of them a copy of it.
 */
const source = JSON.parse(readFileSync(demoScript.SOURCE, "utf8")) as FlowNode[];
const demo = demoScript.demoFlow();
const examples = readdirSync(join(ROOT, "examples")).filter((f) => f.endsWith(".json")).sort();

/** The demo with its own ids, tab label and names taken back to the source's: what must equal the source. */
function undo(flow: readonly FlowNode[]): unknown {
  const text = JSON.stringify(flow).replaceAll(`"${demoScript.ID_PREFIX}`, '"');
  return (JSON.parse(text) as FlowNode[]).map((n) => {
    const { label: _label, ...rest } = n;
    if (n.type === "tab") return rest;
    return n.x === undefined ? { ...n, name: String(n.name).replace(/^sendgate /, "") } : n;
  });
}

/** What a flow's nodes are, as a person sees them on the canvas: type and name. */
const faces = (flow: readonly FlowNode[]) => new Set(flow.filter((n) => typeof n.x === "number").map((n) => `${n.type}:${String(n.name ?? "")}`));

describe("the npm start demo (scripts/demoFlow.js)", function () {
  this.timeout(60_000);

  describe("made from scripts/demo-flow.json", () => {
    it("is that flow node for node, with the demo's ids, tab label and config names", () => {
      const { label: _label, ...tab } = source.find((n) => n.type === "tab") as FlowNode;
      assert.deepEqual(undo(demo), source.map((n) => (n.type === "tab" ? tab : n)));
      assert.deepEqual(demo.map((n) => n.id), source.map((n) => `demo-${n.id}`));
      assert.equal(demo.find((n) => n.type === "tab")?.label, "Sendgate demo");
      assert.match(String(demo.find((n) => n.type === "tab")?.info), /npm start/);
      assert.equal(demo.find((n) => n.type === "cap-config")?.name, "sendgate demo caps (memory)");
    });

    it("is no copy of an example: it chains every gate, and shares few of its nodes with any example", () => {
      const types = new Set(demo.map((n) => n.type));
      for (const gate of ["suppression-gate", "frequency-cap-gate", "quiet-hours-gate", "throughput-gate"]) assert.ok(types.has(gate), `the demo has a ${gate}`);
      const mine = faces(demo);
      for (const file of examples) {
        const theirs = faces(readExample(file));
        const shared = [...mine].filter((f) => theirs.has(f));
        assert.ok(shared.length < mine.size / 3, `${file} shares ${shared.length} of the demo's ${mine.size} nodes: ${shared.join(", ")}`);
      }
    });

    it("keeps none of the source's ids, and every reference points into the demo", () => {
      const text = JSON.stringify(demo);
      for (const { id } of source) assert.ok(!text.includes(`"${id}"`), `${id} is still in the demo`);
      const ids = new Set(demo.map((n) => n.id));
      const tab = (demo.find((n) => n.type === "tab") as FlowNode).id;
      for (const n of demo.filter((f) => typeof f.x === "number")) {
        assert.equal(n.z, tab, `${n.id} is on the demo's tab`);
        for (const target of ((n.wires ?? [])).flat()) assert.ok(ids.has(target), `${n.id} wires to ${target}`);
        if (typeof n.config === "string") assert.ok(ids.has(n.config), `${n.id}'s config ${n.config}`);
      }
      const config = (demo.find((n) => n.type === "cap-config") as FlowNode).id;
      assert.equal(demo.filter((n) => n.type.endsWith("-gate") && n.config === config).length, 4);
    });

    it("numbers its steps above the inject buttons, says what it needs, and fires nothing by itself", () => {
      for (const inject of demo.filter((n) => n.type === "inject")) {
        assert.ok(inject.once !== true && !inject.repeat, `inject "${String(inject.name)}" fires by itself`);
        const step = demo.find((c) => c.type === "comment" && /^[\u2460-\u2473]/.test(String(c.name)) && (c.y as number) <= (inject.y as number) && (inject.y as number) - (c.y as number) <= 80);
        assert.ok(step, `no numbered step just above inject "${String(inject.name)}"`);
      }
      assert.ok(demo.some((n) => n.type === "comment" && /^Needs\b/.test(String(n.name))));
      assert.match(String(demo.find((n) => n.type === "tab")?.info), /^\*\*Needs\b/);
    });
    it("remaps references in arrays at any depth (a catch's scope, a link's links), and leaves other strings and the flow given alone", () => {
      const given: FlowNode[] = [
        { id: "t", type: "tab", label: "x" },
        { id: "a", type: "catch", z: "t", x: 1, y: 1, scope: ["b"], wires: [["b"], []] },
        { id: "b", type: "link out", z: "t", x: 1, y: 1, links: ["a"], name: "a", topic: "c", wires: [] },
      ];
      const before = JSON.stringify(given);
      const made = demoScript.demoFlow(given);
      assert.deepEqual(made.map((n) => [n.id, n.z, n.scope, n.links, n.wires]), [
        ["demo-t", undefined, undefined, undefined, undefined],
        ["demo-a", "demo-t", ["demo-b"], undefined, [["demo-b"], []]],
        ["demo-b", "demo-t", undefined, ["demo-a"], []],
      ]);
      assert.deepEqual([made[2]?.name, made[2]?.topic], ["a", "c"], "a name is text, even one equal to an id; a string that is no id stays");
      assert.equal(JSON.stringify(given), before, "the flow given is not changed");
    });

    it("is made the same every time, so a restart or a second checkout seeds the same ids", () => {
      assert.deepEqual(demoScript.demoFlow(), demo);
    });

    it("is written by seedFlowFile into a new flow file only, never over one", () => {
      const dir = mkdtempSync(join(tmpdir(), "sendgate-seed-"));
      try {
        const file = join(dir, "flows.json");
        assert.equal(demoScript.seedFlowFile(file), true);
        assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), demo);
        writeFileSync(file, "[]");
        assert.equal(demoScript.seedFlowFile(file), false);
        assert.equal(readFileSync(file, "utf8"), "[]", "the flows deployed since are kept");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe("in the test helper", () => {
    helperSuite();

    it("①–⑥: marketing capped at 3, bob opted out before the caps, carol held for her quiet hours, 20 OTPs paced out, a send without recipient caught", async () => {
      const run = await ExampleRun.load(demo);
      await run.press("marketing SMS to alice", { times: 4 });
      assert.equal(run.of("sent").length, 3, "① 3 go");
      assert.deepEqual(run.of("skipped").map((m) => [admissionOf(m).reason, admissionOf(m).cap_id]), [["frequency_capped", "marketing-3-a-minute"]], "① the 4th is capped");

      await run.press("bob texts STOP", { outputs: 0 });
      await run.press("marketing SMS to bob");
      assert.deepEqual(run.of("skipped").map((m) => admissionOf(m).reason), ["frequency_capped", "opted_out"], "③ bob skipped opted_out");
      assert.equal(run.of("sent").filter((m) => m.recipient === "bob").length, 0, "③ nothing reached bob");

      await run.press("SMS to carol (quiet now)", { holds: 1 });
      assert.equal(run.of("sent").filter((m) => m.recipient === "carol").length, 0, "④ carol's SMS is held, not sent");

      const before = run.of("sent").length;
      await run.press("20 OTPs to dan", { outputs: 20 });
      const otps = run.of("sent").slice(before);
      assert.deepEqual([otps.length, new Set(otps.map((m) => m.recipient)).size], [20, 1], "⑤ all 20 OTPs to dan went out");
      const released = otps.filter((m) => admissionOf(m).release_at !== undefined);
      assert.ok(released.length >= 10, `⑤ the throughput gate paced ${released.length} of them from its queue`);

      await run.press("send without recipient");
      assert.match(String((run.of("error")[0]?.error as { message?: string }).message), /recipient/, "⑥");
    });
  });

  it("is not an importable example, and is on a tab of its own", () => {
    assert.equal(demo.filter((n) => n.type === "tab").length, 1);
    const tab = demo.find((n) => n.type === "tab") as FlowNode;
    for (const file of examples) {
      const flow = readExample(file);
      assert.ok(!flow.some((n) => n.id === tab.id), `${file} uses the demo's tab id`);
      assert.ok(!flow.some((n) => n.type === "tab" && n.label === tab.label), `${file} has a tab labelled "${String(tab.label)}" as the demo's`);
    }
  });

  describe("with every example imported beside it, in a real Node-RED", () => {
    const dir = mkdtempSync(join(tmpdir(), "sendgate-demo-"));
    const file = join(dir, "flows.json");
    // what a user has after `npm start` and importing each example from the menu (no copies: no id clashed)
    writeFileSync(file, JSON.stringify([...demo, ...examples.flatMap((f) => readExample(f))]));
    const red = new NodeRedProcess(file, { debugMaxLength: 100_000 });
    before(() => red.start());
    after(async () => {
      await red.stop();
      red.cleanUp();
      rmSync(dir, { recursive: true, force: true });
    });

    it("deploys them all, each node once, and the demo still answers its inject buttons", async () => {
      const deployed = (await (await fetch(`${red.baseUrl}/flows`)).json()) as FlowNode[];
      const ids = deployed.map((n) => n.id);
      assert.equal(new Set(ids).size, ids.length, "no id twice");
      const flows: [string, FlowNode[]][] = [["the demo", demo], ...examples.map((e): [string, FlowNode[]] => [`examples/${e}`, readExample(e)])];
      for (const [name, flow] of flows) {
        const missing = flow.filter((n) => !ids.includes(n.id));
        assert.deepEqual(missing.map((n) => n.id), [], `${name}: nodes not deployed`);
      }
      const comms = await EditorComms.connect(red.baseUrl);
      try {
        const inject = demo.find((n) => n.type === "inject" && n.name === "marketing SMS to alice") as FlowNode;
        assert.equal((await fetch(`${red.baseUrl}/inject/${inject.id}`, { method: "POST" })).status, 200);
        for (let i = 0; i < 100 && comms.of("sent").length === 0; i++) await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(comms.of("sent").map((a) => a.status), ["allowed"], "the demo's SMS went out through every gate, and nothing else came by its debug node");
      } finally {
        comms.close();
      }
      assert.doesNotMatch(red.output, /\[error\]/, red.output);
    });
  });
});
