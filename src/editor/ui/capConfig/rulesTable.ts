import { COUNTS, DISPOSITIONS, ENFORCEMENTS, WINDOW_TYPES } from "../../../core/schema/capRuleSchema";
import { has } from "../../model/lists";
import { checkTable, type RowReport } from "../../model/ruleChecks";
import { CALENDAR_SPAN, displayOf, fixedPeriod, newRowValues, secondsOf, WINDOW_UNITS, type Rule, type RowValues } from "../../model/ruleRows";
import { rowUsageOf, type DeployedOrg } from "../../model/totalUsage";
import { t } from "../i18n";

/** One editableList row per cap: its inputs and what it was loaded from. */
interface RowUi {
  number: JQuery; enabled: JQuery; id: JQuery; name: JQuery;
  scope: JQuery; channel: JQuery; allChannels: JQuery; categories: JQuery;
  max: JQuery; windowType: JQuery; windowCell: JQuery; windowNumber: JQuery; windowUnit: JQuery;
  calendarNote: JQuery; calendarCell: JQuery; disposition: JQuery; enforcement: JQuery; counts: JQuery; usage: JQuery;
  advancedButton: JQuery; advanced: JQuery; advancedOpen: boolean;
  org: JQuery; per: JQuery; match: JQuery; problems: JQuery;
}

interface RowData {
  rule?: Rule;
  initial?: RowValues | null;
  ui?: RowUi;
}

interface Option { value: string; label: string; title?: string }

/** Which input of a row shows the problems of a rule property. */
const FIELD_INPUTS: Record<string, (keyof RowUi)[]> = {
  id: ["id"], org: ["org"], name: ["name"], enabled: ["enabled"], scope: ["scope"],
  channel: ["channel"], max_count: ["max"], window_seconds: ["windowNumber", "windowUnit"],
  window_type: ["windowType"], applies_to_categories: ["categories"], per: ["per"], match: ["match"],
  disposition: ["disposition"], enforcement: ["enforcement"], counts: ["counts"],
};
const ADVANCED_FIELDS = ["org", "per", "match"];

/** A select's value, natively: jQuery's .val() hides a selected disabled option. */
function valueOf(select: JQuery): string {
  return (select[0] as HTMLSelectElement | undefined)?.value ?? "";
}

function setValue(select: JQuery, value: string): void {
  const element = select[0] as HTMLSelectElement | undefined;
  if (element) element.value = value;
}

function fillSelect(select: JQuery, options: readonly Option[], current: string): void {
  select.empty();
  for (const o of options) {
    const option = $("<option></option>").val(o.value).text(o.label).appendTo(select);
    if (o.title) option.attr("title", o.title);
  }
  if (!options.some((o) => o.value === current)) {
    $("<option></option>").val(current).text(current === "" ? t("cap-config.row.choose") : t("cap-config.row.unknown", { value: current })).appendTo(select);
  }
  setValue(select, current);
}

function readRow(ui: RowUi): RowValues {
  return {
    enabled: Boolean(ui.enabled.prop("checked")),
    id: String(ui.id.val() ?? ""),
    name: String(ui.name.val() ?? ""),
    org: String(ui.org.val() ?? ""),
    scope: valueOf(ui.scope),
    channel: valueOf(ui.channel),
    categories: String(ui.categories.val() ?? ""),
    max: String(ui.max.val() ?? ""),
    windowNumber: String(ui.windowNumber.val() ?? ""),
    windowUnit: valueOf(ui.windowUnit),
    windowType: valueOf(ui.windowType),
    per: String(ui.per.val() ?? ""),
    match: String(ui.match.val() ?? ""),
    disposition: valueOf(ui.disposition),
    enforcement: valueOf(ui.enforcement),
    counts: valueOf(ui.counts),
  };
}

function cell(line: JQuery, caption: string, element: JQuery, className = ""): JQuery {
  const box = $('<div class="node-config-cap-cell"></div>').addClass(className).appendTo(line);
  $('<span class="node-config-cap-caption"></span>').text(caption).appendTo(box);
  return element.appendTo(box);
}

const scopeOptions = (): Option[] => [
  { value: "channel", label: t("cap-config.row.oneChannel") },
  { value: "global", label: t("cap-config.row.global") },
];
const unitOptions = (): Option[] => WINDOW_UNITS.map((u) => ({ value: u.value, label: t(`cap-config.units.${u.value}`) }));
const windowTypeOptions = (): Option[] => WINDOW_TYPES.map((w) => ({ value: w, label: t(`cap-config.windowTypes.${w}`), title: t(`cap-config.windowTypes.${w}Title`) }));
const dispositionOptions = (): Option[] => DISPOSITIONS.map((d) => ({ value: d, label: t(`cap-config.dispositions.${d}`), title: t(`cap-config.dispositions.${d}Title`) }));
const enforcementOptions = (): Option[] => ENFORCEMENTS.map((e) => ({ value: e, label: t(`cap-config.enforcements.${e}`), title: t(`cap-config.enforcements.${e}Title`) }));
const countsOptions = (): Option[] => COUNTS.map((c) => ({ value: c, label: t(`cap-config.counts.${c}`), title: t(`cap-config.counts.${c}Title`) }));

/**
 * The caps as a table, checked as the author types with the schema's own
 * messages (one list per row, the bad inputs marked), numbered from 1 as the
 * JSON view and the deploy errors name them.
 */
export class RulesTable {
  private loading = false;
  /** what the deployed cap-config's total caps hold, by the org a row names ("" for none) */
  private readonly deployed = new Map<string, DeployedOrg>();

  constructor(private readonly list: JQuery, private readonly summary: JQuery, private readonly channels: () => string[]) {
    list.css("min-height", "60px").editableList<RowData>({
      addButton: t("cap-config.rules.add"),
      addItem: (row, index, data) => {
        this.addRow(row, index, data);
        this.validate();
      },
      removeItem: () => this.validate(),
      sortItems: () => this.validate(),
      sortable: true,
      removable: true,
      height: "auto",
      scrollOnAdd: false,
    });
  }

  load(rules: readonly Rule[]): void {
    this.loading = true;
    try {
      this.list.editableList("empty");
      for (const rule of rules) this.list.editableList("addItem", { rule });
    } finally {
      this.loading = false;
    }
    this.validate();
  }

  /** The caps the rows stand for, in order. */
  rules(): Rule[] {
    return this.check().map((report) => report.rule);
  }

  /** Shows, in each row of a total cap, what the deployed cap-config counted for it in this org. */
  showDeployed(orgKey: string, deployed: DeployedOrg): void {
    this.deployed.set(orgKey, deployed);
    this.validate();
  }

  /** The channel lists follow the cap-config's extra channels. */
  refreshChannels(): void {
    const channels = this.channels();
    for (const data of this.rows()) {
      if (data.ui) this.fillChannels(data.ui, channels, valueOf(data.ui.channel));
    }
    this.validate();
  }

  validate(): void {
    if (this.loading) return;
    const rows = this.rows();
    const reports = this.check();
    let bad = 0;
    rows.forEach((data, index) => {
      const report = reports[index];
      if (data.ui && report) bad += this.showRow(data.ui, index, report) ? 1 : 0;
    });
    const total = rows.length;
    this.summary.toggleClass("node-config-cap-invalid", bad > 0).toggleClass("node-config-cap-valid", bad === 0);
    if (total === 0) this.summary.text(t("cap-config.rules.none"));
    else if (bad === 0) this.summary.text(total === 1 ? t("cap-config.rules.validOne") : t("cap-config.rules.valid", { count: total }));
    else this.summary.text(t("cap-config.rules.invalid", { bad, count: total }));
  }

  private check(): RowReport[] {
    return checkTable(this.rows().map((data) => ({
      now: readRow(data.ui as RowUi),
      ...(data.rule !== undefined ? { original: data.rule } : {}),
      initial: data.initial ?? null,
    })), this.channels(), t);
  }

  /** The rows still in the list (a removed one fades out for a moment first). */
  private rows(): RowData[] {
    const rows: RowData[] = [];
    this.list.editableList("items").each(function () {
      const data = $(this).data("data") as RowData | undefined;
      if (data?.ui && !$(this).parent().hasClass("red-ui-editableList-item-deleting")) rows.push(data);
    });
    return rows;
  }

  /** Marks a row's bad inputs and lists its problems; true when it has any. */
  private showRow(ui: RowUi, index: number, report: RowReport): boolean {
    ui.number.text(index + 1).attr("title", t("cap-config.row.number", { number: index + 1 }));
    const row = ui.number.closest(".node-config-cap-rule");
    row.find(".input-error").removeClass("input-error");
    ui.problems.empty();
    let openAdvanced = false;
    for (const problem of report.problems) {
      const field = problem.field.split(".")[0] ?? "";
      let inputs = FIELD_INPUTS[field];
      if (field === "channel" && valueOf(ui.scope) === "global") inputs = ["scope"];
      // lifetime is refused because of what the row counts: both selects can fix it
      if (field === "window_type" && valueOf(ui.windowType) === "lifetime") inputs = ["windowType", "counts"];
      let text = problem.text;
      if (inputs) {
        for (const name of inputs) (ui[name] as JQuery).addClass("input-error");
        if (ADVANCED_FIELDS.includes(field)) openAdvanced = true;
      } else {
        text = t("cap-config.rules.changeWithJson", { problem: text });
      }
      $("<li></li>").text(text).appendTo(ui.problems);
    }
    ui.problems.toggle(report.problems.length > 0);
    const usage = rowUsageOf(this.deployed, readRow(ui), t);
    ui.usage.text(usage?.text ?? "").attr("title", usage?.title ?? "").toggle(usage !== null);
    this.showWindow(ui, report.problems.some((p) => p.field === "window_seconds"));
    row.toggleClass("node-config-cap-rule-invalid", report.problems.length > 0);
    if (openAdvanced && !ui.advancedOpen) this.setAdvanced(ui, true);
    return report.problems.length > 0;
  }

  private fillChannels(ui: RowUi, channels: readonly string[], current: string): void {
    fillSelect(ui.channel, [{ value: "", label: t("cap-config.row.choose") }, ...channels.map((c) => ({ value: c, label: c }))], current);
  }

  private showScope(ui: RowUi): void {
    const global = valueOf(ui.scope) === "global";
    ui.channel.toggle(!global);
    ui.allChannels.toggle(global);
  }

  /** A calendar or lifetime row names its period instead of the window inputs; they stay hidden unless window_seconds has a problem. */
  private showWindow(ui: RowUi, windowProblem: boolean): void {
    const type = valueOf(ui.windowType);
    const fixed = fixedPeriod(type);
    ui.windowCell.toggle(!fixed || windowProblem);
    ui.calendarCell.toggle(fixed);
    if (!fixed) return;
    const seconds = secondsOf(Number(ui.windowNumber.val()), valueOf(ui.windowUnit));
    const params = { type, seconds: Number.isFinite(seconds) ? seconds : "?" };
    // a total cap's calendar period is one for every recipient: the UTC day or week, not each recipient's own
    const total = valueOf(ui.counts) === "total";
    let note: string;
    let title: string;
    if (type === "lifetime") {
      note = t("cap-config.row.lifetime");
      title = t("cap-config.row.lifetimeTitle", params);
    } else if (total) {
      note = t(type === "calendar_day" ? "cap-config.row.calendarDayTotal" : "cap-config.row.calendarWeekTotal");
      title = t("cap-config.row.calendarTotalTitle", params);
    } else {
      note = t(type === "calendar_day" ? "cap-config.row.calendarDay" : "cap-config.row.calendarWeek");
      title = t("cap-config.row.calendarTitle", params);
    }
    ui.calendarNote.text(note).attr("title", title);
  }

  private setAdvanced(ui: RowUi, open: boolean): void {
    ui.advancedOpen = open;
    ui.advanced.toggle(open);
    ui.advancedButton.find("i").toggleClass("fa-caret-right", !open).toggleClass("fa-caret-down", open);
  }

  private addRow(container: JQuery, index: number, data: RowData): void {
    const isNew = !has(data, "rule");
    let shown: RowValues;
    if (isNew) {
      // a new cap: one day, on the channel of the cap above it
      const previous = index > 0 ? (this.list.editableList("getItemAt", index - 1) as RowData | undefined) : undefined;
      const channel = previous?.ui ? valueOf(previous.ui.channel) : "";
      shown = newRowValues(channel || this.channels()[0] || "");
    } else {
      shown = displayOf(data.rule as Rule);
    }
    container.addClass("node-config-cap-rule");

    const line1 = $('<div class="node-config-cap-line"></div>').appendTo(container);
    const number = $('<span class="node-config-cap-rule-number"></span>').appendTo(line1);
    const enabled = cell(line1, t("cap-config.row.enabled"), $('<input type="checkbox" class="node-config-cap-rule-enabled">').attr("title", t("cap-config.row.enabledTitle")));
    const id = cell(line1, t("cap-config.row.id"), $('<input type="text" class="node-config-cap-rule-id">').attr("placeholder", t("cap-config.row.idPlaceholder")));
    const name = cell(line1, t("cap-config.row.name"), $('<input type="text" class="node-config-cap-rule-name">'), "node-config-cap-grow");

    const line2 = $('<div class="node-config-cap-line"></div>').appendTo(container);
    const scope = cell(line2, t("cap-config.row.scope"), $('<select class="node-config-cap-rule-scope"></select>'));
    const channel = cell(line2, t("cap-config.row.channel"), $('<select class="node-config-cap-rule-channel"></select>'));
    const allChannels = $('<span class="node-config-cap-all-channels"></span>').text(t("cap-config.row.everyChannel")).insertAfter(channel);
    const categories = cell(line2, t("cap-config.row.categories"),
      $('<input type="text" class="node-config-cap-rule-categories">').attr("placeholder", t("cap-config.row.everyCategory")), "node-config-cap-grow");

    const line3 = $('<div class="node-config-cap-line"></div>').appendTo(container);
    const max = cell(line3, t("cap-config.row.max"), $('<input type="number" min="1" step="1" class="node-config-cap-rule-max">'));
    const counts = cell(line3, t("cap-config.row.counts"), $('<select class="node-config-cap-rule-counts"></select>'));
    const windowType = cell(line3, t("cap-config.row.windowType"), $('<select class="node-config-cap-rule-window-type"></select>'));
    const windowBox = cell(line3, t("cap-config.row.window"), $('<div class="node-config-cap-window"></div>'));
    const windowNumber = $('<input type="number" min="1" step="any" class="node-config-cap-rule-window">').appendTo(windowBox);
    const windowUnit = $('<select class="node-config-cap-rule-unit"></select>').appendTo(windowBox);
    const calendarNote = cell(line3, t("cap-config.row.period"), $('<span class="node-config-cap-calendar-note"></span>'));
    const disposition = cell(line3, t("cap-config.row.disposition"), $('<select class="node-config-cap-rule-disposition"></select>'));
    const enforcement = cell(line3, t("cap-config.row.enforcement"), $('<select class="node-config-cap-rule-enforcement"></select>'));
    const advancedButton = $('<button type="button" class="red-ui-button red-ui-button-small node-config-cap-advanced-button"><i class="fa fa-caret-right"></i> <span></span></button>').appendTo(line3);
    advancedButton.find("span").text(t("cap-config.row.advanced"));
    const usage = $('<div class="node-config-cap-total-usage"></div>').hide().appendTo(container);

    const advanced = $('<div class="node-config-cap-line node-config-cap-advanced"></div>').appendTo(container);
    const org = cell(advanced, t("cap-config.row.org"), $('<input type="text" class="node-config-cap-rule-org">').attr("placeholder", t("cap-config.row.everyOrg")));
    const per = cell(advanced, t("cap-config.row.per"), $('<input type="text" class="node-config-cap-rule-per">').attr("placeholder", t("cap-config.row.perPlaceholder")));
    const match = cell(advanced, t("cap-config.row.match"),
      $('<input type="text" class="node-config-cap-rule-match">').attr("placeholder", t("cap-config.row.matchPlaceholder")), "node-config-cap-grow");
    const problems = $('<ul class="node-config-cap-row-problems node-config-cap-invalid"></ul>').hide().appendTo(container);

    const ui: RowUi = {
      number, enabled, id, name, scope, channel, allChannels, categories, max, windowType,
      windowCell: windowBox.parent(), windowNumber, windowUnit, calendarNote, calendarCell: calendarNote.parent(), disposition, enforcement, counts, usage,
      advancedButton, advanced, advancedOpen: false, org, per, match, problems,
    };
    data.ui = ui;

    enabled.prop("checked", shown.enabled);
    id.val(shown.id);
    name.val(shown.name);
    fillSelect(scope, scopeOptions(), shown.scope);
    this.fillChannels(ui, this.channels(), shown.channel);
    categories.val(shown.categories);
    max.val(shown.max);
    windowNumber.val(shown.windowNumber);
    fillSelect(windowUnit, unitOptions(), shown.windowUnit);
    fillSelect(windowType, windowTypeOptions(), shown.windowType);
    fillSelect(disposition, dispositionOptions(), shown.disposition);
    fillSelect(enforcement, enforcementOptions(), shown.enforcement);
    fillSelect(counts, countsOptions(), shown.counts);
    org.val(shown.org);
    per.val(shown.per);
    match.val(shown.match);
    // what the inputs read back as now: a field still reading this at save keeps the loaded value
    data.initial = isNew ? null : readRow(ui);

    this.setAdvanced(ui, shown.org !== "" || shown.per !== "" || shown.match !== "");
    this.showScope(ui);
    this.showWindow(ui, false);
    scope.on("change", () => this.showScope(ui));
    // bound on the select itself, so it runs before the row's check: a calendar row keeps one period in window_seconds
    windowType.on("change", () => {
      const span = CALENDAR_SPAN[valueOf(windowType)];
      if (span) {
        windowNumber.val(span.number);
        setValue(windowUnit, span.unit);
      }
      this.showWindow(ui, false);
    });
    advancedButton.on("click", (e) => {
      e.preventDefault();
      this.setAdvanced(ui, !ui.advancedOpen);
    });
    container.on("input change", "input, select", () => this.validate());
    if (isNew) setTimeout(() => id.trigger("focus"), 0);
  }
}
