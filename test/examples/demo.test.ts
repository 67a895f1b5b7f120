import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EditorComms } from "../support/editorComms";
import { helper } from "../support/nodeRed";
import { NodeRedProcess, ROOT } from "../support/nodeRedProcess";
import { admissionOf, ExampleRun, flowFile, type FlowNode } from "../support/exampleRun";

/**
 * demo/flows.json, the flow `npm start` deploys (scripts/start.js): what it
 * shows, and that every example of examples/ can be imported beside it.
 */
const demo = flowFile("demo", "flows.json");
const examples = readdirSync(join(ROOT, "examples")).filter((f) => f.endsWith(".json")).sort();

describe("demo/flows.json (npm start)", function () {
  this.timeout(60_000);

  describe("in the test helper", () => {
    before(() => helper.startServer());
    after(() => helper.stopServer());
    afterEach(() => helper.unload());

    it("caps marketing SMS at 3 while OTPs and a P0 alert pass, and sends a send without recipient to the Catch", async () => {
      const run = await ExampleRun.load(demo);
      await run.press("OTP SMS to alice", { times: 3 });
      await run.press("marketing SMS to alice", { times: 5 });
      await run.press("P0 alert to alice");
      await run.press("send without recipient");
      assert.equal(run.of("allowed").length, 3 + 3 + 1);
      assert.deepEqual(run.of("skipped").map((m) => admissionOf(m).cap_id), ["marketing-sms", "marketing-sms"]);
      assert.equal(admissionOf(run.of("allowed").at(-1)).reason, "exempt");
      assert.match(String((run.of("error")[0]?.error as { message?: string }).message), /recipient/);
    });
  });

  it("is not an importable example, and is on a tab of its own", () => {
    assert.equal(demo.filter((n) => n.type === "tab").length, 1);
    const tab = demo.find((n) => n.type === "tab") as FlowNode;
    for (const file of examples) {
      const flow = flowFile("examples", file);
      assert.ok(!flow.some((n) => n.id === tab.id), `${file} uses the demo's tab id`);
      assert.ok(!flow.some((n) => n.type === "tab" && n.label === tab.label), `${file} has a tab labelled "${String(tab.label)}" as the demo's`);
    }
  });

  describe("with every example imported beside it, in a real Node-RED", () => {
    const dir = mkdtempSync(join(tmpdir(), "sendgate-demo-"));
    const file = join(dir, "flows.json");
    // what a user has after `npm start` and importing each example from the menu (no copies: no id clashed)
    writeFileSync(file, JSON.stringify([...demo, ...examples.flatMap((f) => flowFile("examples", f))]));
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
      for (const f of ["demo/flows.json", ...examples.map((e) => `examples/${e}`)]) {
        const missing = flowFile(...f.split("/")).filter((n) => !ids.includes(n.id));
        assert.deepEqual(missing.map((n) => n.id), [], `${f}: nodes not deployed`);
      }
      const comms = await EditorComms.connect(red.baseUrl);
      try {
        const inject = demo.find((n) => n.type === "inject" && n.name === "OTP SMS to alice") as FlowNode;
        assert.equal((await fetch(`${red.baseUrl}/inject/${inject.id}`, { method: "POST" })).status, 200);
        for (let i = 0; i < 100 && comms.of("allowed").length === 0; i++) await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(comms.of("allowed").map((a) => a.status), ["allowed"], "the demo's OTP went out, and nothing else came by its debug node");
      } finally {
        comms.close();
      }
      assert.doesNotMatch(red.output, /\[error\]/, red.output);
    });
  });
});
