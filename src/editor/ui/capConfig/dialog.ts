import { DEFAULT_MAX_QUEUED } from "../../../core/settingsChecks";
import { DEFAULT_CHANNELS } from "../../../core/channels";
import { listText, splitList } from "../../model/lists";
import { tableRulesOf, type Rule } from "../../model/ruleRows";
import { t } from "../i18n";
import type { EditorNode } from "../red";
import { knownChannels } from "./channels";
import { readDeployedTotals } from "./deployedTotals";
import { RulesJson } from "./rulesJson";
import { RulesTable } from "./rulesTable";

type Mode = "table" | "json";

/** What one open cap-config dialog holds between oneditprepare and save or cancel. */
interface RulesDialog {
  mode(): Mode;
  table: RulesTable;
  json: RulesJson;
}

const open = new WeakMap<EditorNode, RulesDialog>();

function prepareTabs(onchange: () => void): void {
  const tabs = RED.tabs.create({
    id: "node-config-cap-tabs",
    onchange: (tab) => {
      $("#node-config-cap-tabs-content").children().hide();
      $(`#${tab.id}`).show();
      onchange();
    },
  });
  for (const name of ["store", "rules", "sends"]) tabs.addTab({ id: `node-config-cap-tab-${name}`, label: t(`cap-config.tabs.${name}`) });
  setTimeout(() => tabs.resize(), 0);
}

/** Shows the rows that apply to the chosen store, rule source and HMAC choice. */
function prepareToggles(node: EditorNode, resize: () => void): void {
  // a choice the flow leaves out shows the default the runtime applies (the select would show nothing)
  for (const [id, fallback] of [["store", "memory"], ["failMode", "open"], ["overloadMode", "closed"], ["rulesSource", "inline"]] as const) {
    const select = $(`#node-config-input-${id}`);
    if (Number(select.prop("selectedIndex")) < 0) select.val(fallback);
  }
  $("#node-config-input-store").on("change", function () {
    const store = String($(this).val());
    $(".node-config-cap-redis").toggle(store === "redis" || store === "redis-cluster");
    $(".node-config-cap-redis-single").toggle(store === "redis");
    $(".node-config-cap-redis-cluster").toggle(store === "redis-cluster");
    $(".node-config-cap-memory").toggle(store === "memory");
    // rule changes travel by Redis pub/sub; without Redis, by the cache expiring
    $(".node-config-cap-pg-shared").toggle(store !== "memory");
    $(".node-config-cap-pg-local").toggle(store === "memory");
  }).trigger("change");
  $("#node-config-input-rulesSource").on("change", function () {
    const source = String($(this).val());
    $(".node-config-cap-inline").toggle(source !== "postgres");
    $(".node-config-cap-postgres").toggle(source === "postgres");
    resize();
  }).trigger("change");
  // the PostgreSQL tip names this node's admin route
  $(".node-config-cap-postgres-tip").text(t("cap-config.rules.postgresTip", { id: node.id }));
  $("#node-config-input-hashRecipients").on("change", function () {
    $(".node-config-cap-hmac").toggle(Boolean($(this).prop("checked")));
  }).trigger("change");
}

function rulesText(rules: unknown): string {
  if (typeof rules === "string") return rules;
  return JSON.stringify(rules === undefined || rules === null ? [] : rules, null, 4);
}

/** The cap-config dialog: store, rules (as a table or JSON), sends. */
export function oneditprepare(this: EditorNode): void {
  const node = this;
  // eslint-disable-next-line prefer-const -- the tabs and toggles made before it resize it once it exists
  let dialog: RulesDialog | undefined;
  prepareTabs(() => dialog?.json.resize());
  $("#node-config-input-timeoutMs").spinner({ min: 1 });
  $("#node-config-input-maxQueued").spinner({ min: 1 });
  if (node.maxQueued === undefined || node.maxQueued === "") $("#node-config-input-maxQueued").val(DEFAULT_MAX_QUEUED);
  $("#node-config-input-leaseSeconds").spinner({ min: 1 });
  if (node.leaseSeconds === undefined || node.leaseSeconds === "") $("#node-config-input-leaseSeconds").val(10);
  $("#node-config-input-historySize").spinner({ min: 0, max: 100 });
  if (node.historySize === undefined || node.historySize === "") $("#node-config-input-historySize").val(0);
  prepareToggles(node, () => dialog?.json.resize());
  $("#node-config-input-exemptTiersText").val(listText(node.exemptTiers, ["P0"]));
  $("#node-config-input-channelsText").val(listText(node.channels, []));
  $(".node-config-cap-sends-tip").text(t("cap-config.sends.tip", { channels: DEFAULT_CHANNELS.join(", ") }));

  // held, not looked up by id: while the large JSON editor is open this dialog is out of the document
  const channelsInput = $("#node-config-input-channelsText");
  const channels = (): string[] => knownChannels(channelsInput.val());
  const tableBlock = $("#node-config-cap-rules-table");
  const jsonBlock = $("#node-config-cap-rules-json");
  const tableButton = $("#node-config-cap-rules-as-table");
  const jsonButton = $("#node-config-cap-rules-as-json");

  const json = new RulesJson("node-config-cap-rules-editor", rulesText(node.rules), $("#node-config-cap-rules-problems"), channels);
  const table = new RulesTable($("#node-config-cap-rules-list"), $("#node-config-cap-rules-summary"), channels);
  // rules the table cannot show (text that is not JSON, not an array, an item that is not an object) open as JSON, untouched
  const loaded = tableRulesOf(node.rules);
  let mode: Mode = "rules" in loaded ? "table" : "json";
  table.load("rules" in loaded ? loaded.rules : []);
  // a deployed cap-config's total caps show what they counted, in their rows
  if ("rules" in loaded) readDeployedTotals(node.id, loaded.rules, (org, deployed) => table.showDeployed(org, deployed));

  const applyMode = (): void => {
    tableBlock.toggle(mode === "table");
    jsonBlock.toggle(mode === "json");
    tableButton.toggleClass("selected", mode === "table");
    jsonButton.toggleClass("selected", mode === "json");
    if (mode === "json") json.resize();
  };
  const setMode = (next: Mode): void => {
    if (next === mode) return;
    if (next === "json") {
      json.setText(JSON.stringify(table.rules(), null, 4));
    } else {
      const parsed = tableRulesOf(json.text());
      if ("problem" in parsed) {
        RED.notify(t("cap-config.rules.notTable", { problem: t(`sendgate.rules.problem.${parsed.problem.key}`, parsed.problem.params) }), "warning");
        return;
      }
      table.load(parsed.rules);
    }
    mode = next;
    applyMode();
  };
  tableButton.on("click", (e) => { e.preventDefault(); setMode("table"); });
  jsonButton.on("click", (e) => { e.preventDefault(); setMode("json"); });
  $("#node-config-cap-rules-expand").on("click", (e) => { e.preventDefault(); json.expand(); });
  channelsInput.on("change keyup", () => {
    table.refreshChannels();
    json.showProblems();
  });
  json.showProblems();
  applyMode();
  dialog = { mode: () => mode, table, json };
  open.set(node, dialog);
}

function close(node: EditorNode): void {
  open.get(node)?.json.destroy();
  open.delete(node);
}

export function oneditsave(this: EditorNode): void {
  const dialog = open.get(this);
  if (dialog && dialog.mode() === "table") {
    const rules: Rule[] = dialog.table.rules();
    // a flow that held its rules as a JSON string keeps the string when the table changed nothing
    const before = typeof this.rules === "string" ? tableRulesOf(this.rules) : null;
    if (!(before && "rules" in before && JSON.stringify(before.rules) === JSON.stringify(rules))) this.rules = rules;
  } else if (dialog) {
    const text = dialog.json.text();
    if (text.trim() === "") {
      this.rules = [];
    } else {
      try {
        this.rules = JSON.parse(text) as unknown;
      } catch {
        // keep what the author typed rather than lose it: the node shows as invalid and the runtime refuses it, naming the error
        this.rules = text;
      }
    }
  }
  this.exemptTiers = splitList($("#node-config-input-exemptTiersText").val());
  this.channels = splitList($("#node-config-input-channelsText").val());
  close(this);
}

export function oneditcancel(this: EditorNode): void {
  close(this);
}
