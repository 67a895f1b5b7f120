import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { DEFAULT_CHANNELS } from "../../src/core/channels";
import { RuleValidationError } from "../../src/core/errors";
import { ruleProblems, validateRules } from "../../src/core/schema/validateRules";
import { editorSession } from "../support/editorSession";
import { NodeRedProcess, ROOT } from "../support/nodeRedProcess";

/**
 * The editor as a person uses it, in Chromium against a Node-RED this test
 * starts: the palette, each dialog, the rules table, deploying, and importing
 * the examples from the menu.
 */
/** The editor's global, as the page.evaluate callbacks below see it. */
declare const RED: { nodes: { filterNodes(filter: { type: string }): { id: string }[] } };

const GATES = ["suppression-gate", "frequency-cap-gate", "quiet-hours-gate", "throughput-gate"] as const;
const PALETTE_LABELS: Record<string, string> = { "suppression-gate": "suppress", "frequency-cap-gate": "freq cap", "quiet-hours-gate": "quiet hours", "throughput-gate": "throughput" };
/** an i18n key shown instead of its text: a key missing from the catalogs the editor loaded */
const RAW_KEY = /(?:^|[\s"(])(?:cap-config|sendgate|frequency-cap-gate|suppression-gate|quiet-hours-gate|throughput-gate|common\.label)\.[a-zA-Z][\w.]*/;
/** every file of examples/, by the name the Import → Examples menu shows */
const EXAMPLES = readdirSync(join(ROOT, "examples")).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -".json".length)).sort();

function helpFirstSentence(type: string): string {
  const html = readFileSync(join(ROOT, "nodes", "locales", "en-US", `${type}.html`), "utf8");
  return (/<p>([^<]*)<\/p>/.exec(html)?.[1] ?? "").trim();
}

describe("the editor in Chromium [browser]", function () {
  this.timeout(120_000);
  const dir = mkdtempSync(join(tmpdir(), "sendgate-editor-"));
  const flowFile = join(dir, "flows.json");
  writeFileSync(flowFile, "[]");
  const red = new NodeRedProcess(flowFile);
  let page: Page;
  let pageErrors: string[] = [];

  const newPage = editorSession(red, dir);

  /** A fresh editor page on what the runtime has deployed. */
  beforeEach(async () => {
    page = await newPage({ width: 1400, height: 1000 });
    pageErrors = [];
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(red.baseUrl);
    await page.waitForSelector(".red-ui-palette-node[data-palette-type='frequency-cap-gate']", { timeout: 60_000 });
  });
  afterEach(async () => {
    await page.close();
    assert.deepEqual(pageErrors, [], "errors thrown in the editor page");
  });

  async function dragFromPalette(type: string, x: number, y: number): Promise<string> {
    const before = await page.evaluate((t) => RED.nodes.filterNodes({ type: t }).map((n: { id: string }) => n.id), type);
    const paletteNode = page.locator(`.red-ui-palette-node[data-palette-type='${type}']`);
    await paletteNode.scrollIntoViewIfNeeded();
    const box = await paletteNode.boundingBox();
    assert.ok(box, `${type} is not in the palette`);
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(x, y, { steps: 12 });
    await page.mouse.up();
    const after = await page.evaluate((t) => RED.nodes.filterNodes({ type: t }).map((n: { id: string }) => n.id), type);
    const added = after.filter((id: string) => !before.includes(id));
    assert.equal(added.length, 1, `dragging ${type} onto the workspace added ${added.length} nodes`);
    return added[0];
  }

  async function openDialog(id: string): Promise<void> {
    await page.locator(`[id='${id}'] .red-ui-flow-node`).dblclick();
    await page.waitForSelector(".red-ui-tray .red-ui-tray-body form", { state: "visible" });
    await page.waitForTimeout(300);
  }

  /** Every text and placeholder the open dialogs show. */
  async function shownTexts(): Promise<string> {
    return page.evaluate(() => {
      const trays = Array.from(document.querySelectorAll(".red-ui-tray"));
      const attributes = trays.flatMap((t) => Array.from(t.querySelectorAll("[placeholder], [title]"))
        .map((e) => `${e.getAttribute("placeholder") ?? ""} ${e.getAttribute("title") ?? ""}`));
      return [...trays.map((t) => (t as HTMLElement).innerText), ...attributes].join("\n");
    });
  }

  async function deploy(): Promise<void> {
    await page.click("#red-ui-header-button-deploy");
    await page.locator(".red-ui-notification", { hasText: "Successfully deployed" }).waitFor({ timeout: 15_000 });
  }

  async function deployedFlows(): Promise<Record<string, unknown>[]> {
    return (await (await fetch(`${red.baseUrl}/flows`)).json()) as Record<string, unknown>[];
  }

  it("puts every gate in the function category, beside delay, on one line, with its help's first sentence as the tooltip", async () => {
    const delayHeight = (await page.locator(".red-ui-palette-node[data-palette-type='delay']").boundingBox())?.height;
    for (const type of GATES) {
      const node = page.locator(`#red-ui-palette-container-function .red-ui-palette-node[data-palette-type='${type}']`);
      assert.equal(await node.count(), 1, `${type} in the function category`);
      assert.equal((await node.innerText()).trim(), PALETTE_LABELS[type]);
      assert.equal((await node.boundingBox())?.height, delayHeight, `${type}'s label fits on one line, as delay's`);
      await node.scrollIntoViewIfNeeded();
      await node.hover();
      const tooltip = page.locator(".red-ui-popover").filter({ hasText: helpFirstSentence(type) });
      await tooltip.waitFor({ timeout: 5000 });
      await page.mouse.move(700, 500);
      await tooltip.waitFor({ state: "hidden", timeout: 5000 });
    }
  });

  it("opens each gate's dialog with every text translated, and its help in the sidebar", async () => {
    for (const [index, type] of GATES.entries()) {
      const id = await dragFromPalette(type, 400 + index * 150, 200 + index * 80);
      await openDialog(id);
      const texts = await shownTexts();
      assert.doesNotMatch(texts, RAW_KEY, `${type}'s dialog shows a raw i18n key`);
      assert.match(texts, /Read the send from|Send fields/, type);
      if (type === "suppression-gate") {
        // the fields it only checks are folded under "Send fields", with the reason
        assert.equal(await page.locator(".sendgate-checked-fields").isVisible(), false);
        await page.click(".sendgate-checked-toggle");
        assert.equal(await page.locator(".sendgate-checked-fields").isVisible(), true);
        assert.match(await page.locator(".sendgate-checked-fields").innerText(), /Category[\s\S]*Tier[\s\S]*Attributes[\s\S]*Own limits/);
        assert.match(await page.locator(".sendgate-checked-reason").innerText(), /does not decide on them/);
      }
      if (type === "throughput-gate") {
        // the key is a TypedInput whose own types (org, org + channel) need no value; max wait only means something when queueing
        const key = page.locator("#node-input-key + .red-ui-typedInput-container");
        assert.match(await key.innerText(), /org/);
        assert.equal(await page.locator("#node-input-maxWait").isVisible(), true);
        await page.selectOption("#node-input-disposition", "skip");
        assert.equal(await page.locator("#node-input-maxWait").isVisible(), false);
        assert.equal(await page.inputValue("#node-input-rate"), "10");
      }
      await page.locator(".red-ui-tray-footer button:has(i.fa-book)").click();
      const help = page.locator(".red-ui-help", { hasText: helpFirstSentence(type) }).last();
      await help.waitFor({ timeout: 5000 });
      assert.match(await help.innerText(), /Inputs[\s\S]*Outputs[\s\S]*Details/);
      await page.click("#node-dialog-cancel");
      await page.waitForSelector(".red-ui-tray", { state: "detached" });
    }
  });

  it("names an invalid rule's problem in its table row in the runtime's words, and deploys the valid rule", async () => {
    const gate = await dragFromPalette("frequency-cap-gate", 500, 300);
    await openDialog(gate);
    // a new cap-config, from the gate's Config field
    await page.click("#node-input-btn-config-add");
    await page.waitForSelector("#node-config-cap-tabs", { state: "visible" });
    assert.doesNotMatch(await shownTexts(), RAW_KEY, "cap-config's dialog shows a raw i18n key");
    await page.click("#red-ui-tab-node-config-cap-tab-rules");
    await page.click("#node-config-cap-rules-table .red-ui-editableList-addButton");
    await page.fill(".node-config-cap-rule-id", "mkt");
    await page.fill(".node-config-cap-rule-max", "0");
    await page.locator(".node-config-cap-rule-max").dispatchEvent("change");

    const invalid = { id: "mkt", scope: "channel", channel: DEFAULT_CHANNELS[0], max_count: 0, window_seconds: 86400 };
    const rowProblems = await page.locator(".node-config-cap-row-problems li").allInnerTexts();
    assert.deepEqual(rowProblems, ruleProblems(invalid, DEFAULT_CHANNELS));
    assert.deepEqual(rowProblems, ["max_count: must be a whole number from 1 to 1000000"]);
    assert.equal(await page.locator(".node-config-cap-rule-max").evaluate((e) => e.classList.contains("input-error")), true);
    assert.equal(await page.locator(".node-config-cap-rule-number").innerText(), "1");

    // the JSON view names the same problem as the deploy would
    await page.click("#node-config-cap-rules-as-json");
    let runtime: string[] = [];
    try {
      validateRules([invalid], DEFAULT_CHANNELS);
    } catch (err) {
      runtime = (err as RuleValidationError).problems;
    }
    assert.deepEqual(await page.locator("#node-config-cap-rules-problems li").allInnerTexts(), runtime);
    await page.click("#node-config-cap-rules-as-table");

    await page.fill(".node-config-cap-rule-max", "3");
    await page.locator(".node-config-cap-rule-max").dispatchEvent("change");
    assert.deepEqual(await page.locator(".node-config-cap-row-problems li").allInnerTexts(), []);
    assert.equal(await page.locator("#node-config-cap-rules-summary").innerText(), "1 cap, valid.");
    await page.click("#node-config-dialog-ok");
    await page.waitForSelector("#node-config-cap-tabs", { state: "detached" });
    await page.click("#node-dialog-ok");
    await page.waitForSelector(".red-ui-tray", { state: "detached" });
    await deploy();

    const config = (await deployedFlows()).find((n) => n.type === "cap-config");
    assert.deepEqual(config?.rules, [{ id: "mkt", scope: "channel", channel: DEFAULT_CHANNELS[0], max_count: 3, window_seconds: 86400 }]);
    assert.ok(!red.output.includes("cap-config is not usable"), red.output);
  });

  it("writes a total cap from a row (counts, lifetime only with total) and shows a deployed total cap's count, what is left and what is on lease", async () => {
    // deployed: a total cap of 5 and a per-recipient cap, and an inject that sends one msg through the gate at start
    const flow = [
      { id: "tot-tab", type: "tab", label: "totals" },
      { id: "tot-cfg", type: "cap-config", name: "totals", rules: [
        { id: "launch", scope: "global", counts: "total", max_count: 5, window_seconds: 86400 },
        { id: "daily", scope: "channel", channel: "sms", max_count: 3, window_seconds: 86400 },
      ] },
      { id: "tot-inject", type: "inject", z: "tot-tab", name: "one send", once: true, onceDelay: 0.1, repeat: "", topic: "",
        props: [{ p: "recipient", v: "u1", vt: "str" }, { p: "channel", v: "sms", vt: "str" }, { p: "payload" }], payload: "", payloadType: "date", x: 120, y: 80, wires: [["tot-gate"]] },
      { id: "tot-gate", type: "frequency-cap-gate", z: "tot-tab", config: "tot-cfg", x: 320, y: 80, wires: [[], [], []] },
    ];
    const posted = await fetch(`${red.baseUrl}/flows`, { method: "POST", headers: { "content-type": "application/json", "Node-RED-Deployment-Type": "full" }, body: JSON.stringify(flow) });
    assert.ok(posted.ok, await posted.text());
    let counted: unknown;
    for (let i = 0; i < 100 && counted !== 1; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const res = await fetch(`${red.baseUrl}/frequency-cap/tot-cfg/totals`);
      if (res.ok) counted = ((await res.json()) as { caps: { count: number }[] }).caps[0]?.count;
    }
    assert.equal(counted, 1, red.output);
    await page.reload();
    await page.waitForSelector("[id='tot-gate'] .red-ui-flow-node", { timeout: 60_000 });

    const openConfig = async (): Promise<void> => {
      await openDialog("tot-gate");
      await page.click("#node-input-btn-config-edit");
      await page.waitForSelector("#node-config-cap-tabs", { state: "visible" });
      await page.click("#red-ui-tab-node-config-cap-tab-rules");
    };
    await openConfig();
    const rows = page.locator(".node-config-cap-rule");
    assert.equal(await rows.count(), 2);
    const usage = rows.nth(0).locator(".node-config-cap-total-usage");
    await usage.waitFor({ state: "visible", timeout: 10_000 });
    const text = await usage.innerText();
    const shown = /^1 counted · (\d+) left · (?:none on lease|(\d+) on \d+ leases?)$/.exec(text);
    assert.ok(shown, text);
    assert.equal(Number(shown[1]) + Number(shown[2] ?? 0), 4, text);
    assert.match(await usage.getAttribute("title") ?? "", /in org default/);
    assert.equal(await rows.nth(1).locator(".node-config-cap-total-usage").isVisible(), false, "a per-recipient cap shows no usage");
    assert.equal(await rows.nth(0).locator(".node-config-cap-rule-counts").inputValue(), "total");

    // lifetime on a per-recipient row: the runtime's problem, both selects marked; counting a total fixes it
    const daily = rows.nth(1);
    await daily.locator(".node-config-cap-rule-window-type").selectOption("lifetime");
    assert.deepEqual(await daily.locator(".node-config-cap-row-problems li").allInnerTexts(), ['window_type: "lifetime" never resets, so only a total cap (counts: "total") may use it']);
    assert.equal(await daily.locator(".node-config-cap-rule-counts").evaluate((e) => e.classList.contains("input-error")), true);
    assert.equal(await daily.locator(".node-config-cap-calendar-note").innerText(), "never resets");
    await daily.locator(".node-config-cap-rule-counts").selectOption("total");
    assert.deepEqual(await daily.locator(".node-config-cap-row-problems li").allInnerTexts(), []);
    assert.equal(await daily.locator(".node-config-cap-total-usage").isVisible(), false, "deployed, it is not a total cap yet");
    assert.doesNotMatch(await shownTexts(), RAW_KEY, "cap-config's dialog shows a raw i18n key");
    await page.click("#node-config-dialog-ok");
    await page.waitForSelector("#node-config-cap-tabs", { state: "detached" });
    await page.click("#node-dialog-ok");
    await page.waitForSelector(".red-ui-tray", { state: "detached" });
    await deploy();

    const config = (await deployedFlows()).find((n) => n.id === "tot-cfg");
    assert.deepEqual(config?.rules, [
      { id: "launch", scope: "global", counts: "total", max_count: 5, window_seconds: 86400 },
      { id: "daily", scope: "channel", channel: "sms", max_count: 3, window_seconds: 86400, window_type: "lifetime", counts: "total" },
    ]);
    // deployed, the new total cap shows its own count
    await openConfig();
    await rows.nth(1).locator(".node-config-cap-total-usage").waitFor({ state: "visible", timeout: 10_000 });
    assert.match(await rows.nth(1).locator(".node-config-cap-total-usage").innerText(), /^\d+ counted · \d+ left · /);
    await page.click("#node-config-dialog-cancel");
    await page.waitForSelector("#node-config-cap-tabs", { state: "detached" });
    await page.click("#node-dialog-cancel");
  });

  it("imports each example from the menu and deploys it", async () => {
    for (const name of EXAMPLES) {
      await page.click("#red-ui-header-button-sidemenu");
      await page.click("#menu-item-import");
      await page.click("#red-ui-tab-red-ui-clipboard-dialog-import-tab-examples");
      const labels = page.locator("#red-ui-clipboard-dialog-import-tab-examples .red-ui-treeList-label");
      const example = labels.filter({ hasText: new RegExp(`^\\s*${name}\\s*$`) });
      if (!(await example.isVisible())) await labels.filter({ hasText: "@sendgate/node-red-frequency-cap" }).click();
      await example.click();
      // the example's flow loads before Import is enabled; a click that landed while the tree was still opening selected
      // nothing (CI once waited 30 s on a disabled Import): the example is clicked again until it is selected
      const importButton = page.locator("#red-ui-clipboard-dialog-ok");
      for (let tries = 0; tries < 10 && !(await importButton.isEnabled()); tries++) {
        await page.waitForTimeout(300);
        if (!(await importButton.isEnabled())) await example.click();
      }
      await importButton.click();
      await page.locator(".red-ui-notification", { hasText: "Imported" }).last().waitFor();
      await page.waitForSelector("#red-ui-clipboard-dialog", { state: "hidden" });
    }
    await deploy();
    const deployed = await deployedFlows();
    for (const name of EXAMPLES) {
      const example = JSON.parse(readFileSync(join(ROOT, "examples", `${name}.json`), "utf8")) as { type: string }[];
      const types = new Set(example.map((n) => n.type));
      for (const type of types) assert.ok(deployed.some((n) => n.type === type), `${name}: no ${type} deployed`);
    }
    // the imported demo runs: its inject button, clicked on the canvas, reaches the debug sidebar
    await page.locator(".red-ui-tab", { hasText: "Frequency cap demo" }).click();
    const inject = (JSON.parse(readFileSync(join(ROOT, "examples", "frequency-cap-demo.json"), "utf8")) as { id: string; type: string; name?: string }[])
      .find((n) => n.type === "inject" && n.name === "OTP SMS to alice");
    await page.click("#red-ui-tab-debug-link-button");
    await page.locator(`[id='${inject?.id}'] .red-ui-flow-node-button`).click();
    await page.locator(".red-ui-debug-msg", { hasText: "allowed" }).first().waitFor({ timeout: 10_000 });
    assert.doesNotMatch(red.output, /\[error\]/, red.output);
  });
});
