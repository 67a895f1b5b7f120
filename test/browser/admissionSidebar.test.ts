import assert from "node:assert/strict";
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Page } from "playwright-core";
import { editorSession } from "../support/editorSession";
import { NodeRedProcess, ROOT } from "../support/nodeRedProcess";

/* eslint-disable @typescript-eslint/no-require-imports */
const bcrypt = require(require.resolve("bcryptjs", { paths: [dirname(require.resolve("@node-red/editor-api/package.json"))] })) as {
  hashSync(text: string, rounds: number): string;
};

/** The editor's globals, as the page.evaluate callbacks below see them. */
declare const RED: {
  sidebar: { show(id: string): void; containsTab(id: string): boolean };
  workspaces: { show(id: string): void };
  editor: { editConfig(name: string, type: string, id: string): void };
  nodes: { node(id: string): { rules?: { id: string; enforcement?: string }[]; valid?: boolean } | null };
  plugins: { getPlugin(id: string): { onremove?: () => void; onadd?: () => void } | undefined };
};

const RULES = [
  { id: "two-an-hour", name: "Two an hour", scope: "channel", channel: "sms", max_count: 2, window_seconds: 3600 },
  { id: "one-trial", scope: "global", max_count: 1, window_seconds: 3600, enforcement: "shadow" },
];
const inject = (id: string, y: number, recipient: string) => ({
  id, type: "inject", z: "tab1", name: `send to ${recipient}`, x: 130, y,
  props: [{ p: "payload", v: "hello", vt: "str" }, { p: "recipient", v: recipient, vt: "str" }, { p: "channel", v: "sms", vt: "str" }],
  repeat: "", once: false, topic: "", wires: [["sup"]],
});
const FLOW = [
  { id: "tab1", type: "tab", label: "Sends" },
  { id: "caps", type: "cap-config", name: "demo caps", store: "memory", rules: RULES, historySize: 10 },
  inject("send-alice", 80, "alice"),
  inject("send-bob", 140, "bob"),
  { id: "sup", type: "suppression-gate", z: "tab1", name: "opt-outs", x: 330, y: 110, config: "caps", duplicateWindow: 0, wires: [["cap"], []] },
  { id: "cap", type: "frequency-cap-gate", z: "tab1", name: "sms caps", x: 530, y: 110, config: "caps", wires: [[], [], []] },
];

/**
 * The Admission sidebar in Chromium against a Node-RED this test starts with
 * adminAuth: the tab is there, its counts move as msgs are injected, the
 * inspector shows a recipient's usage of each cap, and a user without
 * frequency-cap.read is told why the inspector cannot read.
 */
describe("the Admission sidebar in Chromium [browser]", function () {
  this.timeout(180_000);
  const dir = mkdtempSync(join(tmpdir(), "sendgate-sidebar-"));
  const flowFile = join(dir, "flows.json");
  writeFileSync(flowFile, JSON.stringify(FLOW));
  const password = bcrypt.hashSync("secret", 8);
  const red = new NodeRedProcess(flowFile, {
    adminAuth: {
      type: "credentials",
      users: [
        { username: "admin", password, permissions: "*" },
        // enough to open the editor and watch, not to read caps
        { username: "watcher", password, permissions: ["flows.read", "nodes.read", "settings.read", "plugins.read", "context.read", "library.read", "debug.read", "status.read"] },
      ],
    },
  });
  let page: Page;
  let pageErrors: string[] = [];

  const newPage = editorSession(red, dir);
  beforeEach(() => { pageErrors = []; });
  afterEach(async () => {
    await page?.close();
    assert.deepEqual(pageErrors, [], "errors thrown in the editor page");
  });

  /** Logs in through the editor's own login dialog and opens the Admission tab. */
  async function openEditorAs(username: string, show = true): Promise<void> {
    page = await newPage({ width: 1280, height: 820 });
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(red.baseUrl);
    await page.fill("#node-dialog-login-username", username);
    await page.fill("#node-dialog-login-password", "secret");
    await page.click("#node-dialog-login-submit");
    await page.waitForSelector(".red-ui-palette-node[data-palette-type='frequency-cap-gate']", { timeout: 60_000 });
    // Node-RED 4 and 5 draw the sidebar's tabs differently: ask the editor, not its DOM
    await page.waitForFunction(() => RED.sidebar.containsTab("sendgate-admission"), undefined, { timeout: 10_000 });
    if (!show) return;
    await page.evaluate(() => RED.sidebar.show("sendgate-admission"));
    await page.waitForSelector(".sendgate-admission", { state: "visible" });
  }

  /** The admin API as the admin user: a token from Node-RED's own login. */
  async function adminToken(): Promise<string> {
    const res = await fetch(`${red.baseUrl}/auth/token`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_id: "node-red-admin", grant_type: "password", scope: "*", username: "admin", password: "secret" }),
    });
    const body = await res.text();
    assert.ok(res.ok, body);
    return (JSON.parse(body) as { access_token: string }).access_token;
  }

  /** Deploys `flow` in full, as the editor's Deploy button does. */
  async function deployFlow(flow: unknown[]): Promise<void> {
    const token = await adminToken();
    const res = await fetch(`${red.baseUrl}/flows`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}`, "Node-RED-Deployment-Type": "full" },
      body: JSON.stringify(flow),
    });
    assert.ok(res.ok, await res.text());
  }

  /** Presses an inject node through the admin API (it may be on a tab the editor does not show). */
  async function injectById(id: string): Promise<void> {
    const res = await fetch(`${red.baseUrl}/inject/${id}`, { method: "POST", headers: { authorization: `Bearer ${await adminToken()}` } });
    assert.ok(res.ok, await res.text());
  }

  /** Where a picture goes: docs/ when SENDGATE_SCREENSHOT=docs (the README shows them), else the test's own dir. */
  function picture(name: string): string {
    return process.env.SENDGATE_SCREENSHOT === "docs" ? join(ROOT, "docs", name) : join(dir, name);
  }

  /** Presses an inject node's button in the flow, each press once the sidebar counted the one before (a loaded box is slow). */
  async function press(injectId: string, times: number): Promise<void> {
    for (let i = 0; i < times; i++) {
      const before = Math.max(0, await shown("sup", "allowed"));
      await page.click(`[id='${injectId}'] .red-ui-flow-node-button`);
      await until(`press ${i + 1} of ${injectId} counted`, async () => (await shown("sup", "allowed")) === before + 1);
    }
  }

  /** The number a gate row of the sidebar shows for one stat. */
  async function shown(gate: string, stat: string): Promise<number> {
    const text = await page.locator(`.sendgate-admission-gate[data-gate='${gate}'] [data-stat='${stat}'] .sendgate-admission-value`).textContent({ timeout: 1000 }).catch(() => null);
    return text === null ? -1 : Number(text);
  }

  async function until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
    const started = Date.now();
    while (!(await check())) {
      if (Date.now() - started > timeoutMs) {
        const picture = join(tmpdir(), `sendgate-sidebar-failed-${Date.now()}.png`);
        await page.screenshot({ path: picture }).catch(() => undefined);
        assert.fail(`${what} did not happen within ${timeoutMs} ms (the page: ${picture}; Node-RED said: ${red.output.slice(-2000)})`);
      }
      await page.waitForTimeout(100);
    }
  }

  it("shows each gate's counts moving as msgs are injected, the shadow cap's would-refuse, and a recipient's usage in the inspector", async () => {
    await openEditorAs("admin");
    assert.equal(await page.evaluate(() => RED.sidebar.containsTab("sendgate-admission")), true, "the Admission tab is in the sidebar");

    await press("send-alice", 3);
    await until("the cap gate shows 2 allowed, 1 skipped", async () => (await shown("cap", "allowed")) === 2 && (await shown("cap", "skipped")) === 1);
    assert.equal(await shown("sup", "allowed"), 3);
    await press("send-alice", 2);
    await press("send-bob", 1);
    await until("the counts move to 3 allowed, 3 skipped", async () => (await shown("cap", "allowed")) === 3 && (await shown("cap", "skipped")) === 3);
    assert.equal(await shown("sup", "allowed"), 6);
    const cap = page.locator(".sendgate-admission-gate[data-gate='cap']");
    assert.match(await cap.locator(".sendgate-admission-reasons").innerText(), /frequency_capped 3/);
    // alice's second send went out past the trial cap of 1 (her later ones were refused by the enforced cap)
    assert.match(await cap.locator(".sendgate-admission-shadow[data-cap='one-trial']").innerText(), /would refuse 1/);
    assert.ok(await cap.locator("svg.sendgate-admission-spark rect[data-kind='allowed']").count() >= 1, "the sparkline has bars");
    assert.ok(await cap.locator("svg.sendgate-admission-spark rect[data-kind='skipped']").count() >= 1);
    assert.match(await page.locator(".sendgate-admission-config-block[data-config='caps'] .sendgate-admission-config-head").innerText(), /demo caps.*memory ready.*held 0/);
    // every text from the plugin's catalog: a missing key would show itself
    assert.doesNotMatch(await page.locator(".sendgate-admission").innerText(), /admission-sidebar:|admission\.[a-zA-Z]/);

    await page.selectOption(".sendgate-admission-config", "caps");
    await page.fill(".sendgate-admission-recipient", "alice");
    await page.fill(".sendgate-admission-channel", "sms");
    await page.click(".sendgate-admission-inspect");
    const enforced = page.locator(".sendgate-admission-cap[data-cap='two-an-hour']");
    await enforced.waitFor({ timeout: 10_000 });
    assert.match(await enforced.locator(".sendgate-admission-cap-text").innerText(), /^2 of 2 · remaining 0 · free in (59 min|1 h)/);
    assert.equal(await enforced.locator(".sendgate-admission-bar-fill.sendgate-admission-bar-full").count(), 1);
    const shadow = page.locator(".sendgate-admission-cap[data-cap='one-trial']");
    assert.match(await shadow.locator(".sendgate-admission-cap-head").innerText(), /one-trial shadow/);
    assert.match(await shadow.locator(".sendgate-admission-cap-text").innerText(), /^1 of 1 · remaining 0 · would refuse; free in/);
    // under the caps, alice's last verdicts at every gate, newest first: 5 at the suppression gate, 2 allowed and 3 skipped at the cap
    const verdicts = page.locator(".sendgate-admission-recipient[data-lines='history'] .sendgate-admission-line");
    await verdicts.first().waitFor({ timeout: 10_000 });
    const lines = await verdicts.allInnerTexts();
    assert.equal(lines.length, 10, lines.join("\n"));
    assert.equal(lines.filter((l) => / skipped · frequency_capped \(two-an-hour\) · retry in (59 min|1 h)/.test(l)).length, 3, lines.join("\n"));
    assert.equal(await page.locator(".sendgate-admission-recipient[data-lines='history'] .sendgate-admission-line[data-outcome='allowed']").count(), 7);
    assert.equal(await page.locator(".sendgate-admission-recipient[data-lines='held']").count(), 0, "nothing held for alice: no held list");

    await page.locator(".red-ui-notification").first().waitFor({ state: "detached", timeout: 10_000 }).catch(() => undefined);
    const target = picture("admission-sidebar.png");
    await page.screenshot({ path: target });
    assert.ok(statSync(target).size > 10_000);

    // removed from the palette, the plugin takes its tab with it
    await page.evaluate(() => RED.plugins.getPlugin("sendgate-admission-sidebar")?.onremove?.());
    assert.equal(await page.evaluate(() => RED.sidebar.containsTab("sendgate-admission")), false);
    assert.equal(await page.locator(".sendgate-admission").count(), 0);
  });

  it("edits enforcement in the cap-config's rules table: a shadow rule shows as shadow, and a rule switched to shadow saves it", async () => {
    await openEditorAs("admin");
    assert.equal(await page.evaluate(() => RED.nodes.node("caps")?.valid), true, "a rule with enforcement is valid in the editor");
    await page.evaluate(() => RED.editor.editConfig("", "cap-config", "caps"));
    await page.click(".red-ui-tray a:has-text('Rules')");
    const selects = page.locator(".node-config-cap-rule-enforcement");
    await selects.first().waitFor({ state: "visible" });
    assert.deepEqual(await selects.evaluateAll((els) => els.map((e) => (e as HTMLSelectElement).value)), ["enforce", "shadow"]);
    await selects.first().selectOption("shadow");
    await page.click(".red-ui-tray-toolbar button:has-text('Update'), .red-ui-tray-toolbar button:has-text('Done')");
    await page.waitForFunction(() => RED.nodes.node("caps")?.rules?.[0]?.enforcement === "shadow");
    const rules = await page.evaluate(() => RED.nodes.node("caps")?.rules);
    assert.deepEqual(rules?.map((r) => [r.id, r.enforcement]), [["two-an-hour", "shadow"], ["one-trial", "shadow"]]);
  });

  it("tells a user without frequency-cap.read that the inspector may not read caps", async () => {
    await openEditorAs("watcher");
    await page.fill(".sendgate-admission-recipient", "alice");
    await page.click(".sendgate-admission-inspect");
    const refusal = page.locator(".sendgate-admission-refusal");
    await refusal.waitFor({ timeout: 10_000 });
    assert.match(await refusal.innerText(), /not allowed to read frequency caps: your user needs the frequency-cap\.read permission/);
    assert.equal(await page.locator(".sendgate-admission-cap").count(), 0);
  });
  it("shows its button among the sidebar's tabs at the editor's default width, not only in the ▾ menu", async () => {
    await openEditorAs("admin", false);
    // Node-RED 4: a row of buttons beside the open tab, the last ones moved into ▾ when they do not fit;
    // Node-RED 5: a bar of buttons, one per tab, below the sidebar
    const nodeRed4 = (await page.locator("#red-ui-tab-info-link-button").count()) > 0;
    const button = page.locator(nodeRed4 ? "#red-ui-tab-sendgate-admission-link-button" : "button[data-tab-id='sendgate-admission']");
    await page.waitForTimeout(500);
    assert.equal(await button.isVisible(), true, "the Admission tab's button is shown");
    if (nodeRed4) {
      // the tabs the editor pins keep their places before it
      for (const core of ["info", "help", "debug"]) assert.equal(await page.locator(`#red-ui-tab-${core}-link-button`).isVisible(), true, core);
      assert.equal(await page.locator("#red-ui-sidebar").evaluate((e) => Math.round(e.getBoundingClientRect().width)), 315, "the default width");
    }
    // Node-RED 5 keeps a user's open sidebar tab across sessions (the earlier tests left this one open), and a
    // click on the open tab's button folds the sidebar: click only when the tab is not already showing
    const content = page.locator(".sendgate-admission");
    if (!(await content.isVisible())) await button.click();
    await content.waitFor({ state: "visible" });
  });

  it("lists broken gates first, with their problem: an invalid cap-config's gate, a bad deferMax, an unknown time zone", async () => {
    const tab = (id: string, label: string) => ({ id, type: "tab", label });
    const gateOf = (id: string, type: string, z: string, name: string, config: string, y: number, extra: Record<string, unknown> = {}) => ({
      id, type, z, name, x: 330, y, config, wires: type === "suppression-gate" ? [[], []] : [[], [], []], ...extra,
    });
    await deployFlow([
      tab("br-shop", "Shop"), tab("br-news", "Newsletter"),
      { id: "br-caps", type: "cap-config", name: "shop caps", store: "memory", rules: RULES },
      // what the JSON view keeps when the author's text is not JSON: the editor and the runtime refuse it
      { id: "br-bad", type: "cap-config", name: "news caps", store: "memory", rules: "[{ \"id\": \"weekly\", max_count: 1 }" },
      { ...inject("br-send", 80, "alice"), z: "br-shop", wires: [["br-ok"]] },
      gateOf("br-ok", "suppression-gate", "br-shop", "opt-outs", "br-caps", 80, { duplicateWindow: 0 }),
      gateOf("br-defer", "frequency-cap-gate", "br-shop", "sms caps", "br-caps", 160, { deferMax: -5 }),
      gateOf("br-zone", "quiet-hours-gate", "br-shop", "nights", "br-caps", 240, { timezone: "Mars/Olympus" }),
      gateOf("br-news-cap", "frequency-cap-gate", "br-news", "weekly news cap", "br-bad", 80),
    ]);
    await openEditorAs("admin");
    await injectById("br-send");

    const problems = page.locator(".sendgate-admission-attention .sendgate-admission-problem");
    await until("three broken gates listed", async () => (await problems.count()) === 3);
    assert.deepEqual(await problems.evaluateAll((els) => els.map((e) => e.getAttribute("data-gate"))), ["br-zone", "br-defer", "br-news-cap"],
      "in the editor's tab order (Shop, Newsletter), by name within a tab");
    const text = async (id: string) => page.locator(`.sendgate-admission-problem[data-gate='${id}']`).innerText();
    await until("the runtime's statuses reached the editor", async () => /deployed:/.test(await text("br-news-cap")) && /deployed:/.test(await text("br-defer")));
    assert.match(await text("br-news-cap"), /in the flow: cap-config "news caps" is invalid: rules: not valid JSON/);
    assert.match(await text("br-news-cap"), /deployed: cap-config invalid/);
    assert.match(await text("br-defer"), /in the flow: deferMax \(Defer limit\): must be whole seconds from 0 to 31,622,400, got -5/);
    assert.match(await text("br-defer"), /deployed: invalid Defer limit/);
    assert.match(await text("br-zone"), /in the flow: unknown time zone "Mars\/Olympus"/);
    assert.match(await text("br-zone"), /deployed: invalid timezone/);
    // in their tabs they say broken, never "allowed 0 · skipped 0"
    for (const id of ["br-defer", "br-zone", "br-news-cap"]) {
      const row = page.locator(`.sendgate-admission-tab .sendgate-admission-gate[data-gate='${id}']`);
      assert.match(await row.innerText(), /broken/, id);
      assert.equal(await row.locator("[data-stat]").count(), 0, `${id} shows no counts`);
    }
    // the healthy gate counts as before, and the broken cap-config is named, not hidden
    await until("the working gate counted its msg", async () => (await shown("br-ok", "allowed")) === 1);
    assert.match(await page.locator(".sendgate-admission-config-block[data-config='br-bad']").innerText(), /news caps invalid/);
    await page.locator(".red-ui-notification").first().waitFor({ state: "detached", timeout: 10_000 }).catch(() => undefined);
    await page.screenshot({ path: picture("admission-sidebar-broken.png") });
  });

  it("groups 20 gates of 10 flows by tab, busy first, idle tabs folded, with the inspector in view; Enter inspects", async () => {
    const flow: unknown[] = [{ id: "many-caps", type: "cap-config", name: "campaign caps", store: "memory", rules: RULES }];
    for (let i = 1; i <= 10; i++) {
      flow.push(
        { id: `many-tab${i}`, type: "tab", label: `Campaign ${i}` },
        { ...inject(`many-send${i}`, 80, `user${i}`), z: `many-tab${i}`, wires: [[`many-sup${i}`]] },
        { id: `many-sup${i}`, type: "suppression-gate", z: `many-tab${i}`, name: `opt-outs ${i}`, x: 330, y: 80, config: "many-caps", duplicateWindow: 0, wires: [[`many-cap${i}`], []] },
        { id: `many-cap${i}`, type: "frequency-cap-gate", z: `many-tab${i}`, name: `sms caps ${i}`, x: 530, y: 80, config: "many-caps", wires: [[], [], []] },
      );
    }
    await deployFlow(flow);
    await openEditorAs("admin");
    for (let k = 0; k < 3; k++) await injectById("many-send7");
    await injectById("many-send4");

    const groups = page.locator(".sendgate-admission-tab");
    await until("the busy gates counted", async () => (await shown("many-cap7", "skipped")) === 1 && (await shown("many-sup4", "allowed")) === 1);
    assert.deepEqual(await groups.evaluateAll((els) => els.map((e) => e.getAttribute("data-tab"))), Array.from({ length: 10 }, (_, i) => `many-tab${i + 1}`));
    const open = await groups.evaluateAll((els) => els.filter((e) => (e.querySelector(".sendgate-admission-tab-body") as HTMLElement).offsetParent !== null).map((e) => e.getAttribute("data-tab")));
    assert.deepEqual(open, ["many-tab4", "many-tab7"], "only the busy tabs are open");
    assert.match(await page.locator(".sendgate-admission-tab[data-tab='many-tab1'] .sendgate-admission-tab-head").innerText(), /Campaign 1\s+gates 2$/);
    // a folded tab opens on a click, and stays as the user left it across redraws
    await page.click(".sendgate-admission-tab[data-tab='many-tab2'] .sendgate-admission-tab-head");
    await page.waitForTimeout(5500);
    assert.match(await page.locator(".sendgate-admission-tab[data-tab='many-tab2'] .sendgate-admission-gate[data-gate='many-sup2']").innerText(), /idle/);
    // the filter finds a flow
    await page.fill(".sendgate-admission-filter", "campaign 7");
    await until("the filter leaves one tab", async () => (await groups.count()) === 1);
    await page.fill(".sendgate-admission-filter", "");
    await until("the filter is cleared", async () => (await groups.count()) === 10);

    // the inspector is in view without scrolling, its cap-config by name; Enter in the recipient field inspects
    const inspect = page.locator(".sendgate-admission-inspect");
    const box = await inspect.boundingBox();
    assert.ok(box && box.y + box.height <= 820, `the Inspect button is in view (${JSON.stringify(box)})`);
    assert.deepEqual(await page.locator(".sendgate-admission-config option").allInnerTexts(), ["campaign caps"]);
    await page.fill(".sendgate-admission-recipient", "user7");
    await page.press(".sendgate-admission-recipient", "Enter");
    const enforced = page.locator(".sendgate-admission-cap[data-cap='two-an-hour']");
    await enforced.waitFor({ timeout: 10_000 });
    assert.match(await enforced.locator(".sendgate-admission-cap-text").innerText(), /^2 of 2 · remaining 0/);
    await page.evaluate(() => RED.workspaces.show("many-tab7"));
    await page.locator(".red-ui-notification").first().waitFor({ state: "detached", timeout: 10_000 }).catch(() => undefined);
    await page.screenshot({ path: picture("admission-sidebar-flows.png") });
  });
});
