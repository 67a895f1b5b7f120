import { shadowTotals, totals } from "../model/feed";
import type { GateView } from "../model/arrange";
import { formatSeconds, type SidebarTranslate } from "../model/words";
import { sparkline, stat } from "./dom";

/** What a row needs of the editor: to show a gate on the canvas. */
export interface RowContext {
  t: SidebarTranslate;
  reveal(id: string): void;
  /** a tab's label, for the rows of the attention list */
  tabLabel(id: string): string;
}

function nameLink(gate: GateView, ctx: RowContext): JQuery {
  return $('<a href="#" class="sendgate-admission-gate-name"></a>').text(gate.label).on("click", (e) => {
    e.preventDefault();
    ctx.reveal(gate.id);
  });
}

/** `frequency-cap-gate · demo caps`: what the gate is and whose store it counts in. */
function where(gate: GateView, extra?: string): JQuery {
  const parts = [gate.type, gate.configName, ...(extra ? [extra] : [])].filter((p) => p !== "");
  return $('<span class="sendgate-admission-gate-where"></span>').text(` ${parts.join(" · ")}`);
}

/** A broken gate in the attention list: every problem, saying whether the flow as edited or the deployed node has it. */
export function problemRow(gate: GateView, ctx: RowContext): JQuery {
  const { t } = ctx;
  const row = $('<div class="sendgate-admission-problem"></div>').attr("data-gate", gate.id);
  $('<div class="sendgate-admission-gate-head"></div>')
    .append($('<i class="fa fa-exclamation-triangle sendgate-admission-warn"></i>'), " ", nameLink(gate, ctx), where(gate, ctx.tabLabel(gate.tab)))
    .appendTo(row);
  for (const p of gate.problems) {
    $('<div class="sendgate-admission-problem-text"></div>').attr("data-where", p.where)
      .append($('<span class="sendgate-admission-problem-where"></span>').text(`${t(`problem.where.${p.where}`)} `))
      .append($("<span></span>").text(p.text))
      .appendTo(row);
  }
  return row;
}

/** A gate in its tab's list: broken, idle (one line), or busy (its bars and counts). */
export function gateRow(gate: GateView, ctx: RowContext): JQuery {
  const { t } = ctx;
  const row = $('<div class="sendgate-admission-gate"></div>').attr("data-gate", gate.id);
  const head = $('<div class="sendgate-admission-gate-head"></div>').append(nameLink(gate, ctx), where(gate)).appendTo(row);
  if (gate.disabled) {
    row.addClass("sendgate-admission-gate-idle");
    $('<span class="sendgate-admission-state"></span>').text(` ${t("state.disabled")}`).appendTo(head);
    return row;
  }
  if (gate.problems.length > 0) {
    row.addClass("sendgate-admission-gate-broken");
    $('<span class="sendgate-admission-state sendgate-admission-broken"></span>').text(` ${t("state.broken")}`)
      .attr("title", gate.problems.map((p) => p.text).join("\n")).appendTo(head);
    return row;
  }
  const summary = gate.summary;
  if (!summary || gate.activity === 0 || !gate.feed) {
    row.addClass("sendgate-admission-gate-idle");
    const word = gate.feed ? "state.idle" : gate.changed ? "state.notDeployed" : "state.noCounts";
    $('<span class="sendgate-admission-state"></span>').text(` ${t(word)}`).appendTo(head);
    if (gate.feed) row.attr("title", t("totals", { ...totals(gate.feed) }));
    return row;
  }
  row.append(sparkline(summary.bars, { allowed: t("stat.allowed"), skipped: t("stat.skipped"), deferred: t("stat.deferred"), errors: t("stat.errors") }));
  const stats = $('<div class="sendgate-admission-stats"></div>').appendTo(row);
  for (const kind of ["allowed", "skipped", "deferred"] as const) stats.append(stat(kind, t(`stat.${kind}`), summary[kind]));
  if (summary.errors > 0) stats.append(stat("errors", t("stat.errors"), summary.errors));
  if (summary.skippedBy.length > 0) {
    $('<div class="sendgate-admission-reasons"></div>')
      .text(t("skippedBy", { reasons: summary.skippedBy.map((r) => `${r.reason} ${r.count}`).join(", ") }))
      .appendTo(row);
  }
  const extra: string[] = [];
  if (summary.failOpen > 0) extra.push(t("failOpen", { count: summary.failOpen }));
  if (summary.held > 0) extra.push(t("held", { count: summary.held }));
  if (gate.heldNow > 0) {
    extra.push(t("holding", { count: gate.heldNow }));
    if (typeof gate.nextDueAt === "number") extra.push(t("nextDue", { wait: formatSeconds(Math.max(0, Math.ceil((gate.nextDueAt - Date.now()) / 1000)), t) }));
  }
  if (extra.length > 0) $('<div class="sendgate-admission-extra"></div>').text(extra.join(" · ")).appendTo(row);
  for (const s of shadowTotals(gate.feed)) {
    $('<div class="sendgate-admission-shadow"></div>').attr("data-cap", s.cap_id)
      .text(t(s.org !== "*" ? "shadowOrg" : "shadow", { cap: s.cap_id, org: s.org, count: s.would_refuse }))
      .attr("title", t("shadowTitle"))
      .appendTo(row);
  }
  row.attr("title", t("totals", { ...totals(gate.feed) }));
  return row;
}
