import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { englishMessages } from "../../src/core/schema/catalog";
import { numberSettingProblem, quietTimeProblem, type GateType } from "../../src/core/gateSettings";
import { editorSession } from "../support/editorSession";
import { NodeRedProcess } from "../support/nodeRedProcess";

/** The editor's global, as the page.evaluate callbacks below see it. */
declare const RED: {
  editor: { editConfig(name: string, type: string, id: string): void };
  nodes: { node(id: string): { valid?: boolean; validationErrors?: string[] } | null };
  sidebar: { help: { show(type: string): void } };
};

const t = englishMessages();
const FLOW = [
  { id: "dlg-tab", type: "tab", label: "Dialogs" },
  { id: "dlg-caps", type: "cap-config", name: "dialog caps", store: "memory", rules: [{ id: "a", scope: "channel", channel: "sms", max_count: 2, window_seconds: 3600 }] },
  { id: "dlg-sup", type: "suppression-gate", z: "dlg-tab", x: 150, y: 80, config: "dlg-caps", wires: [[], []] },
  { id: "dlg-cap", type: "frequency-cap-gate", z: "dlg-tab", x: 150, y: 160, config: "dlg-caps", wires: [[], [], []] },
  { id: "dlg-quiet", type: "quiet-hours-gate", z: "dlg-tab", x: 150, y: 240, config: "dlg-caps", wires: [[], [], []] },
  { id: "dlg-tp", type: "throughput-gate", z: "dlg-tab", x: 150, y: 320, config: "dlg-caps", wires: [[], []] },
];
/** What a browser prints when the page asks for a host this machine cannot reach (the palette manager's catalogue): not the page's fault. */
const NETWORK_ONLY = /^Failed to load resource: net::|^Error loading catalog /;

/**
 * The gates' dialogs in Chromium: a numeric setting is checked and worded
 * as src/core/gateSettings says (what the runtime's deploy check is
 * to say), an emptied quiet-hours time or throughput interval is flagged, the
 * cap-config's JSON rules editor closes without an error in the console, and
 * the suppression-gate's help explains its status.
 */
describe("the gates' dialogs in Chromium [browser]", function () {
  this.timeout(120_000);
  const dir = mkdtempSync(join(tmpdir(), "sendgate-dialogs-"));
  const flowFile = join(dir, "flows.json");
  writeFileSync(flowFile, JSON.stringify(FLOW));
  const red = new NodeRedProcess(flowFile);
  let page: Page;
  /** uncaught errors and console errors of the page, both */
  let errors: string[] = [];

  const newPage = editorSession(red, dir);
  beforeEach(async () => {
    errors = [];
    page = await newPage({ width: 1400, height: 1000 });
    page.on("pageerror", (err) => errors.push(`uncaught: ${err.message}`));
    page.on("console", (m) => {
      if (m.type() === "error" && !NETWORK_ONLY.test(m.text())) errors.push(`console: ${m.text()}`);
    });
    await page.goto(red.baseUrl);
    await page.waitForSelector("[id='dlg-cap'] .red-ui-flow-node", { timeout: 60_000 });
  });
  afterEach(async () => {
    await page?.close();
    assert.deepEqual(errors, [], "errors in the editor page");
  });

  async function openDialog(id: string): Promise<void> {
    const form = ".red-ui-tray .red-ui-tray-body form";
    // a double click the canvas takes as two single clicks (a busy box) opens nothing: try again
    for (let attempt = 1; ; attempt++) {
      await page.locator(`[id='${id}'] .red-ui-flow-node`).dblclick();
      try {
        await page.waitForSelector(form, { state: "visible", timeout: 10_000 });
        break;
      } catch (err) {
        if (attempt === 3) throw err;
      }
    }
    await page.waitForTimeout(300);
  }

  async function done(): Promise<void> {
    await page.click("#node-dialog-ok");
    await page.waitForSelector(".red-ui-tray", { state: "detached" });
  }

  async function hasError(selector: string): Promise<boolean> {
    return page.locator(selector).evaluate((e) => e.classList.contains("input-error"));
  }

  async function problemsOf(id: string): Promise<string[]> {
    return page.evaluate((nodeId) => RED.nodes.node(nodeId)?.validationErrors ?? [], id);
  }

  it("types into the rules' JSON, then Cancel and Update, with no error in the page or its console (no disposed Monaco model used)", async () => {
    for (const button of ["#node-config-dialog-cancel", "#node-config-dialog-ok"]) {
      await page.evaluate(() => RED.editor.editConfig("", "cap-config", "dlg-caps"));
      await page.click("#red-ui-tab-node-config-cap-tab-rules");
      await page.click("#node-config-cap-rules-as-json");
      const text = page.locator("#node-config-cap-rules-editor .view-lines");
      await text.waitFor({ state: "visible" });
      await text.click();
      await page.keyboard.press("Control+End");
      await page.keyboard.type(" ", { delay: 30 });
      await page.click(button);
      await page.waitForSelector("#node-config-cap-tabs", { state: "detached" });
      // Monaco reports what it hit after the editor closed from a timer: give it the time
      await page.waitForTimeout(1500);
      assert.deepEqual(errors, [], `after ${button}`);
    }
    assert.equal(await page.evaluate(() => RED.nodes.node("dlg-caps")?.valid), true, "the rules, typed into, are still valid");
  });

  it("checks each gate's numeric settings with the bounds and words of src/core/gateSettings, the runtime's to be", async () => {
    const cases: [string, GateType, string, string][] = [
      ["dlg-cap", "frequency-cap-gate", "deferMax", "-5"],
      ["dlg-cap", "frequency-cap-gate", "jitter", "86401"],
      ["dlg-sup", "suppression-gate", "duplicateWindow", "1.5"],
      ["dlg-quiet", "quiet-hours-gate", "deferMax", "abc"],
      ["dlg-tp", "throughput-gate", "rate", "0"],
      ["dlg-tp", "throughput-gate", "burst", "0"],
      ["dlg-tp", "throughput-gate", "maxWait", "604801"],
    ];
    for (const [id, type, property, value] of cases) {
      await openDialog(id);
      await page.fill(`#node-input-${property}`, value);
      await page.locator(`#node-input-${property}`).dispatchEvent("change");
      assert.equal(await hasError(`#node-input-${property}`), true, `${type} ${property} ${value} is marked`);
      await done();
      const expected = numberSettingProblem(type, property, value, t);
      assert.ok(expected, `${type} ${property} ${value} is a problem for the module`);
      assert.deepEqual(await problemsOf(id), [expected], `${type} ${property} ${value}`);
      // put back, so the next case sees this node valid
      await openDialog(id);
      await page.fill(`#node-input-${property}`, property === "rate" || property === "burst" ? "10" : "60");
      await done();
      assert.deepEqual(await problemsOf(id), [], `${type} ${property} back to a good value`);
    }
    // 0 is a defer limit: a msg that would be held is skipped at once (the runtime takes it too)
    await openDialog("dlg-cap");
    await page.fill("#node-input-deferMax", "0");
    await done();
    assert.deepEqual(await problemsOf("dlg-cap"), []);
  });

  it("flags an emptied quiet-hours \"to\" time and an emptied throughput interval", async () => {
    await openDialog("dlg-quiet");
    await page.fill("#node-input-end", "");
    await page.locator("#node-input-end").dispatchEvent("change");
    assert.equal(await hasError("#node-input-end"), true, "the empty \"to\" is marked");
    await done();
    assert.deepEqual(await problemsOf("dlg-quiet"), [quietTimeProblem("end", "", t)]);
    assert.match((await problemsOf("dlg-quiet"))[0] ?? "", /^end \(Quiet until\): must be a time of day HH:MM/);

    await openDialog("dlg-tp");
    await page.fill("#node-input-interval", "");
    await page.locator("#node-input-interval").dispatchEvent("change");
    assert.equal(await hasError("#node-input-interval"), true, "the empty interval is marked");
    // an empty burst is the rate, as its placeholder says: not a problem
    await page.fill("#node-input-burst", "");
    await page.locator("#node-input-burst").dispatchEvent("change");
    assert.equal(await hasError("#node-input-burst"), false);
    await done();
    assert.deepEqual(await problemsOf("dlg-tp"), [numberSettingProblem("throughput-gate", "interval", "", t)]);
  });

  it("explains the suppression-gate's status, list N included, in its help", async () => {
    await page.evaluate(() => RED.sidebar.help.show("suppression-gate"));
    const help = page.locator(".red-ui-help").filter({ hasText: "Skips a send whose recipient opted out" }).last();
    await help.waitFor({ timeout: 10_000 });
    assert.match(await help.innerText(), /list: the suppress \/ unsuppress control msgs handled since the deploy/);
  });
});
