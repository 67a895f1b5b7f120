import { arrange, type GateView, type TabInfo } from "../model/arrange";
import { activity, summarize, WINDOW_MS, type FeedConfig, type FeedGate } from "../model/feed";
import { gateProblems, type EditorConfig, type EditorGate } from "../model/health";
import { configNames } from "../model/names";
import type { SidebarTranslate } from "../model/words";
import { foldable } from "./dom";
import { gateRow, problemRow, type RowContext } from "./gateRows";
import { createInspector } from "./inspector";
import type { Handler, SidebarNode, SidebarRed } from "./red";

/** The runtime's topics: `…/<cap-config id>` for its send path, `…/<cap-config id>/<gate id>` for each gate. */
export const TOPIC = "sendgate/admission";
/** the plugin's message catalog (Node-RED names it after the module and the plugin file) */
export const CATALOG = "@sendgate/node-red-frequency-cap/admission-sidebar";
export const TAB_ID = "sendgate-admission";
const GATE_TYPES = new Set(["suppression-gate", "frequency-cap-gate", "quiet-hours-gate", "throughput-gate"]);
/** Stores start folded past this many, so many cap-configs do not push the gates out of sight. */
const STORES_SHOWN_OPEN = 3;

/** What the runtime sent, each with the editor's clock minus the runtime's when it came. */
interface Received<T> {
  data: T;
  bucketMs: number;
  offset: number;
}

function labelOf(node: SidebarNode): string {
  if (node.name) return node.name;
  const label = node._def?.label;
  if (typeof label === "function") {
    try {
      const text = label.call(node);
      if (text) return String(text);
    } catch {
      // a label function that fails: the type names the node
    }
  } else if (typeof label === "string" && label !== "") {
    return label;
  }
  return node.type;
}

/**
 * Puts the tab's button right after the tabs the editor pins (info, help,
 * debug), unless the user has ordered the sidebar's tabs themselves (their
 * order, kept in the editor's settings, then places it). A tab is added after
 * the core ones, and the sidebar, when its buttons do not all fit its width,
 * moves the last ones into its ▾ menu: at the editor's default width (315 px)
 * four fit, so a plugin's tab was only in the menu, whatever its label or
 * icon. Here config and context go to the menu instead. Node-RED offers no
 * call for a tab's place, so the tab's list item and button are moved, which
 * is how the sidebar itself reorders them; it keeps that order from then on.
 */
function placeAfterPinnedTabs(RED: SidebarRed): void {
  const saved = RED.settings.get("editor.sidebar.order");
  if (Array.isArray(saved) && saved.includes(TAB_ID)) return;
  const tab = $(`#red-ui-tab-${TAB_ID}`);
  const button = $(`#red-ui-tab-${TAB_ID}-link-button`);
  const lastPinned = button.siblings(".red-ui-tab-link-button-pinned").last();
  const lastPinnedTab = $(`#${String(lastPinned.attr("id") ?? "").replace(/-link-button$/, "")}`);
  if (tab.length === 0 || button.length === 0 || lastPinned.length === 0 || lastPinnedTab.length === 0) return;
  tab.insertAfter(lastPinnedTab);
  button.insertAfter(lastPinned);
  // the sidebar already made room for the buttons by hiding the last one, this one: it hides a later one instead
  if (button.css("display") !== "none") return;
  const shown = button.nextAll(".red-ui-tab-link-button").filter((_, el) => $(el).css("display") !== "none");
  if (shown.length === 0) return;
  shown.last().hide();
  button.show();
}

/**
 * Adds the Admission tab to the editor's sidebar: broken gates first with
 * their problem, then every gate of the open flows grouped by flow tab (busy
 * first, idle tabs folded), the cap-configs' send paths, and the inspector
 * of a recipient's caps, kept in view below the lists. Returns what removes
 * it again.
 */
export function mount(RED: SidebarRed): { remove(): void } {
  const t: SidebarTranslate = (key, params) => RED._(`${CATALOG}:admission.${key}`, params);
  const configs = new Map<string, Received<FeedConfig>>();
  const gates = new Map<string, Map<string, Received<FeedGate>>>();
  /** the user's folding of tabs and sections, kept across redraws */
  const opened = new Map<string, boolean>();
  const sections = new Map<string, boolean>();

  const content = $('<div class="sendgate-admission"></div>');
  const lists = $('<div class="sendgate-admission-lists"></div>').appendTo(content);
  const toolbar = $('<div class="sendgate-admission-toolbar"></div>').appendTo(lists);
  const filterInput = $('<input type="search" class="sendgate-admission-filter">').attr("placeholder", t("filter.placeholder")).appendTo(toolbar);
  const busyOnly = $('<input type="checkbox" class="sendgate-admission-busy-only">');
  $('<label class="sendgate-admission-busy-label"></label>').append(busyOnly, " ", $("<span></span>").text(t("filter.busyOnly"))).appendTo(toolbar);
  const drawn = $('<div class="sendgate-admission-drawn"></div>').appendTo(lists);

  const inspector = createInspector(t, (id) => {
    const node = RED.nodes.node(id);
    return node ? labelOf(node) : id;
  });
  const inspectorBox = $('<div class="sendgate-admission-inspector-box"></div>').appendTo(content);
  const inspectorHead = $('<div class="sendgate-admission-section"></div>').append($("<span></span>").text(t("inspector"))).appendTo(inspectorBox);
  inspectorBox.append(inspector.element);
  foldable(inspectorHead, inspector.element, true, (open) => sections.set("inspector", open));

  const ctx: RowContext = {
    t,
    reveal: (id) => RED.view.reveal(id),
    tabLabel: (id) => tabsNow().find((tab) => tab.id === id)?.label ?? id,
  };

  function tabsNow(): TabInfo[] {
    const tabs: TabInfo[] = [];
    RED.nodes.eachWorkspace((ws) => { tabs.push({ id: ws.id, label: ws.label, kind: "tab", disabled: ws.disabled === true }); });
    RED.nodes.eachSubflow((sf) => { tabs.push({ id: sf.id, label: t("subflow", { name: sf.name }), kind: "subflow", disabled: false }); });
    return tabs;
  }

  function editorConfigs(): { byId: Map<string, EditorConfig>; names: Map<string, string> } {
    const byId = new Map<string, EditorConfig>();
    const named: { id: string; name: string; label: string }[] = [];
    RED.nodes.eachConfig((n) => {
      if (n.type !== "cap-config") return;
      byId.set(n.id, { id: n.id, name: n.name ?? "", valid: n.valid !== false, validationErrors: n.validationErrors ?? [] });
      // unnamed, the editor's label says what it is ("memory · 2 caps")
      const label = labelOf({ ...n, name: "" });
      named.push({ id: n.id, name: n.name ?? "", label: label === n.type ? "" : label });
    });
    return { byId, names: configNames(named) };
  }

  function feedOf(configId: string, gateId: string): Received<FeedGate> | undefined {
    return gates.get(configId)?.get(gateId);
  }

  function gateViews(configById: Map<string, EditorConfig>, names: Map<string, string>): GateView[] {
    const views: GateView[] = [];
    RED.nodes.eachNode((n) => {
      if (!GATE_TYPES.has(n.type)) return;
      const configId = typeof n.config === "string" ? n.config : "";
      const configName = names.get(configId) ?? "";
      const editorGate: EditorGate = {
        id: n.id, type: n.type, label: labelOf(n), tab: n.z ?? "", config: configId,
        valid: n.valid !== false, validationErrors: n.validationErrors ?? [], status: n.status ?? null,
        disabled: n.d === true, changed: n.changed === true,
      };
      const received = feedOf(configId, n.id);
      const summary = received ? summarize(received.data, Date.now() - received.offset, WINDOW_MS, received.bucketMs) : null;
      const heldNow = received?.data.heldNow ?? 0;
      views.push({
        id: n.id, type: n.type, label: editorGate.label, tab: editorGate.tab, configName,
        problems: gateProblems(editorGate, configById, configName, t),
        feed: received?.data ?? null, summary, heldNow, activity: activity(summary, heldNow),
        nextDueAt: received && typeof received.data.nextDueAt === "number" ? received.data.nextDueAt + received.offset : null,
        disabled: editorGate.disabled, changed: editorGate.changed,
      });
    });
    return views;
  }

  function section(key: string, heading: string, body: JQuery, defaultOpen: boolean): JQuery {
    const box = $('<div class="sendgate-admission-block"></div>').attr("data-section", key);
    const head = $('<div class="sendgate-admission-section"></div>').append($("<span></span>").text(heading)).appendTo(box);
    box.append(body);
    foldable(head, body, sections.get(key) ?? defaultOpen, (open) => sections.set(key, open));
    return box;
  }

  function storeLines(configById: Map<string, EditorConfig>, names: Map<string, string>): JQuery {
    const body = $('<div class="sendgate-admission-stores"></div>');
    const ids = [...configById.keys()].sort((a, b) => (names.get(a) ?? a).localeCompare(names.get(b) ?? b));
    for (const id of ids) {
      const block = $('<div class="sendgate-admission-config-block"></div>').attr("data-config", id).appendTo(body);
      const head = $('<div class="sendgate-admission-config-head"></div>').append($("<b></b>").text(names.get(id) ?? id)).appendTo(block);
      const config = configs.get(id)?.data;
      const editor = configById.get(id);
      let state: string;
      if (editor && !editor.valid) {
        state = t("config.invalid");
        head.addClass("sendgate-admission-broken");
      } else if (!config) {
        state = t("config.notRunning");
      } else {
        const parts = [t("config.store", { store: config.store, state: config.storeState }), t("config.held", { count: config.held })];
        if (config.maxQueued > 0) parts.push(t("config.queue", { length: config.queueLength, max: config.maxQueued }));
        if (config.circuit !== "closed") parts.push(t("config.circuit", { state: config.circuit.replace("_", "-") }));
        if (config.rulesState !== "ok") parts.push(t("config.rules", { state: config.rulesState }));
        state = parts.join(" · ");
      }
      $('<span class="sendgate-admission-config-state"></span>').text(` ${state}`).appendTo(head);
    }
    return body;
  }

  function render(): void {
    const { byId, names } = editorConfigs();
    inspector.setConfigs(names, (id) => byId.get(id)?.valid !== false);
    const tabs = tabsNow();
    const laid = arrange(gateViews(byId, names), tabs, { filter: String(filterInput.val() ?? ""), busyOnly: busyOnly.prop("checked") === true, opened });
    drawn.empty();

    if (laid.attention.length > 0) {
      const body = $('<div class="sendgate-admission-attention"></div>');
      for (const gate of laid.attention) body.append(problemRow(gate, ctx));
      drawn.append(section("attention", t("attention", { count: laid.attention.length }), body, true));
    }

    const list = $('<div class="sendgate-admission-gates"></div>');
    for (const group of laid.groups) {
      const box = $('<div class="sendgate-admission-tab"></div>').attr("data-tab", group.tab.id).appendTo(list);
      const counts = [t("tab.gates", { count: group.gates.length })];
      if (group.busy > 0) counts.push(t("tab.busy", { count: group.busy }));
      if (group.broken > 0) counts.push(t("tab.broken", { count: group.broken }));
      const head = $('<div class="sendgate-admission-tab-head"></div>')
        .append($('<span class="sendgate-admission-tab-label"></span>').text(group.tab.label))
        .append($('<span class="sendgate-admission-tab-counts"></span>').text(` ${counts.join(" · ")}`))
        .appendTo(box);
      const body = $('<div class="sendgate-admission-tab-body"></div>').appendTo(box);
      for (const gate of group.gates) body.append(gateRow(gate, ctx));
      foldable(head, body, group.open, (open) => opened.set(group.tab.id, open));
    }
    if (laid.total === 0) $('<div class="sendgate-admission-empty"></div>').text(t("empty")).appendTo(list);
    else if (laid.shown === 0) $('<div class="sendgate-admission-empty"></div>').text(t("noMatch")).appendTo(list);
    drawn.append(section("gates", t("gates"), list, true));

    if (byId.size > 0) drawn.append(section("stores", t("stores", { count: byId.size }), storeLines(byId, names), byId.size <= STORES_SHOWN_OPEN));
  }

  /** `sendgate/admission/<config>` (its send path) or `…/<config>/<gate>` (a gate's counts); null: it is gone. */
  function onFeed(topic: string, message: unknown): void {
    const path = topic.slice(TOPIC.length + 1);
    const slash = path.indexOf("/");
    const configId = slash < 0 ? path : path.slice(0, slash);
    const m = message as { at: number; bucketMs: number; config?: FeedConfig; gate?: FeedGate } | null;
    const offset = m ? Date.now() - m.at : 0;
    if (slash < 0) {
      if (m?.config) configs.set(configId, { data: m.config, bucketMs: m.bucketMs, offset });
      else configs.delete(configId);
    } else {
      const gateId = path.slice(slash + 1);
      const own = gates.get(configId) ?? new Map<string, Received<FeedGate>>();
      gates.set(configId, own);
      if (m?.gate) own.set(gateId, { data: m.gate, bucketMs: m.bucketMs, offset });
      else own.delete(gateId);
    }
    schedule();
  }

  // many messages can come in one burst (an editor opening gets every retained one), and an import or
  // deploy changes many nodes at once: draw once they are all there
  let pending: ReturnType<typeof setTimeout> | undefined;
  function schedule(): void {
    if (pending !== undefined) return;
    pending = setTimeout(() => {
      pending = undefined;
      render();
    }, 80);
  }
  /** a node's status from the runtime (the editor keeps it on the node): a gate may have broken or recovered */
  const onStatus = (topic: string): void => {
    const node = RED.nodes.node(topic.slice("status/".length));
    if (node && GATE_TYPES.has(node.type)) schedule();
  };

  filterInput.on("input search", () => render());
  busyOnly.on("change", () => render());

  RED.sidebar.addTab({
    id: TAB_ID,
    label: t("label"),
    name: t("name"),
    iconClass: "fa fa-tachometer",
    content,
    enableOnEdit: true,
    pinned: true,
    onchange: schedule,
  });
  placeAfterPinnedTabs(RED);
  RED.comms.subscribe(`${TOPIC}/#`, onFeed);
  RED.comms.subscribe("status/#", onStatus);
  const events = ["nodes:add", "nodes:remove", "nodes:change", "flows:loaded", "flows:add", "flows:remove", "flows:change", "workspace:change", "deploy"];
  const onEvent: Handler = () => schedule();
  for (const e of events) RED.events.on(e, onEvent);
  // windows slide even when nothing new arrives
  const timer = setInterval(render, 5000);
  render();

  return {
    remove() {
      clearInterval(timer);
      if (pending !== undefined) clearTimeout(pending);
      RED.comms.unsubscribe(`${TOPIC}/#`, onFeed);
      RED.comms.unsubscribe("status/#", onStatus);
      for (const e of events) RED.events.off(e, onEvent);
      RED.sidebar.removeTab(TAB_ID);
    },
  };
}
