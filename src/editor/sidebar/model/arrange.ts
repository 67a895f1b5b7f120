import type { FeedGate, WindowSummary } from "./feed";
import type { Problem } from "./health";

/**
 * How the sidebar lays out many gates: broken ones first, on their own, with
 * their problem; then every gate under its flow tab, in the editor's tab
 * order, busy gates first; a tab with nothing going on starts folded, so ten
 * flows of idle gates read as ten lines. A filter narrows all of it.
 */

export interface GateView {
  id: string;
  type: string;
  label: string;
  tab: string;
  configName: string;
  problems: readonly Problem[];
  /** what the runtime last sent for this gate, and its last five minutes; null when it sent nothing */
  feed: FeedGate | null;
  summary: WindowSummary | null;
  heldNow: number;
  /** when its next held msg is due, on the editor's clock (ms); null: none held, or not known */
  nextDueAt?: number | null;
  /** msgs in the window plus those held now: 0 is idle */
  activity: number;
  disabled: boolean;
  /** edited since the last deploy */
  changed: boolean;
}

export interface TabInfo {
  id: string;
  label: string;
  kind: "tab" | "subflow";
  disabled: boolean;
}

export interface Group {
  tab: TabInfo;
  gates: GateView[];
  busy: number;
  broken: number;
  open: boolean;
}

export interface Arranged {
  attention: GateView[];
  groups: Group[];
  /** gates that pass the filter, and all the gates there are */
  shown: number;
  total: number;
}

export interface ArrangeOptions {
  /** text to find in a gate's name, type, tab, cap-config or problem ("" shows all) */
  filter: string;
  /** only gates that did something in the window, hold msgs or are broken */
  busyOnly: boolean;
  /** tabs the user opened (true) or folded (false); others follow their contents */
  opened: ReadonlyMap<string, boolean>;
}

function matches(gate: GateView, tab: TabInfo | undefined, needle: string): boolean {
  if (needle === "") return true;
  const haystack = [gate.label, gate.type, tab?.label ?? "", gate.configName, ...gate.problems.map((p) => p.text)].join("\n").toLowerCase();
  return haystack.includes(needle);
}

/** Broken first, then the busiest, then by name. */
function byConcern(a: GateView, b: GateView): number {
  const broken = Number(b.problems.length > 0) - Number(a.problems.length > 0);
  return broken || b.activity - a.activity || a.label.localeCompare(b.label);
}

export function arrange(gates: readonly GateView[], tabs: readonly TabInfo[], options: ArrangeOptions): Arranged {
  const needle = options.filter.trim().toLowerCase();
  const tabById = new Map(tabs.map((tab) => [tab.id, tab]));
  const order = new Map(tabs.map((tab, i) => [tab.id, i]));
  const kept = gates.filter((g) => matches(g, tabById.get(g.tab), needle) && (!options.busyOnly || g.activity > 0 || g.problems.length > 0));
  const byTab = new Map<string, GateView[]>();
  for (const gate of kept) {
    const list = byTab.get(gate.tab) ?? [];
    list.push(gate);
    byTab.set(gate.tab, list);
  }
  // gates on a tab the editor does not list (it is being removed) go last, under their tab id
  const known = [...tabs, ...[...byTab.keys()].filter((id) => !tabById.has(id)).map((id): TabInfo => ({ id, label: id, kind: "tab", disabled: false }))];
  const groups: Group[] = [];
  for (const tab of known) {
    const list = byTab.get(tab.id);
    if (!list) continue;
    list.sort(byConcern);
    const busy = list.filter((g) => g.activity > 0).length;
    const broken = list.filter((g) => g.problems.length > 0).length;
    const open = options.opened.get(tab.id) ?? (needle !== "" || busy > 0 || broken > 0 || byTab.size === 1);
    groups.push({ tab, gates: list, busy, broken, open });
  }
  const attention = kept.filter((g) => g.problems.length > 0)
    .sort((a, b) => (order.get(a.tab) ?? tabs.length) - (order.get(b.tab) ?? tabs.length) || a.label.localeCompare(b.label));
  return { attention, groups, shown: kept.length, total: gates.length };
}
