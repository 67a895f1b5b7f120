import { isAbsent, listText, splitList } from "../model/lists";
import { quietTimeProblem } from "../../core/gateSettings";
import { badDay, DAY_ORDER, daysKind, daysOf, isKnownZone, windowShape } from "../model/quietHours";
import { gateFields } from "./gateFields";
import { labelStyle, outputLabel, inputLabel, numberValidator, showDefault } from "./gateCommon";
import { nodeTexts, t, verdict } from "./i18n";
import type { EditorNode, Validator } from "./red";
import { prepareFieldInputs } from "./sendFields";

const TYPE = "quiet-hours-gate";
const own = nodeTexts(TYPE);
const E = `${TYPE}.errors`;

function dayName(day: number): string {
  return own(`${TYPE}.dayNames.${day}`);
}

/** Left out of a flow, a time takes the runtime's default; cleared in the dialog, it is a problem (no default is shown then). */
function time(property: "start" | "end"): Validator {
  return function (value, opt) {
    return verdict(quietTimeProblem(property, value, t), opt);
  };
}

const days: Validator = function (value, opt) {
  const bad = badDay(value);
  if (bad === null) return true;
  return verdict("notArray" in bad ? own(`${E}.daysNotArray`) : own(`${E}.badDay`, { value: JSON.stringify(bad.item) }), opt);
};

const timezone: Validator = function (value, opt) {
  if (isAbsent(value)) return true;
  if (typeof value !== "string") return verdict(own(`${E}.zoneType`), opt);
  return isKnownZone(value) ? true : verdict(own(`${E}.unknownZone`, { zone: JSON.stringify(value) }), opt);
};

const disposition: Validator = function (value, opt) {
  if (isAbsent(value) || value === "defer" || value === "skip") return true;
  return verdict(own(`${E}.disposition`, { value: JSON.stringify(value) }), opt);
};

const exemptCategories: Validator = function (value, opt) {
  const ok = value === undefined || value === null || typeof value === "string" || (Array.isArray(value) && value.every((s) => typeof s === "string"));
  return ok ? true : verdict(t("cap-config.errors.list"), opt);
};

function daysLabel(value: unknown): string {
  const kind = daysKind(value);
  if (kind.kind === "every") return "";
  if (kind.kind === "list") return kind.days.map(dayName).join(" ");
  return own(`${TYPE}.days.${kind.kind}`);
}

function describeWindow(): void {
  const start = String($("#node-input-start").val() ?? "").trim();
  const end = String($("#node-input-end").val() ?? "").trim();
  $("#quiet-hours-gate-window-tip").text(own(`${TYPE}.window.${windowShape(start, end)}`, { start, end }));
}

function prepareDays(value: unknown): void {
  const ticked = daysOf(value);
  const box = $("#quiet-hours-gate-days").empty();
  for (const day of DAY_ORDER) {
    const label = $('<label class="quiet-hours-gate-day"></label>').appendTo(box);
    $('<input type="checkbox">').attr("data-day", day).prop("checked", ticked.includes(day)).appendTo(label);
    $("<span></span>").text(dayName(day)).appendTo(label);
  }
}

/** Every zone the browser knows, to pick from; any IANA name may be typed. */
function prepareZones(): void {
  const supported = (Intl as { supportedValuesOf?: (key: string) => string[] }).supportedValuesOf;
  const zones = typeof supported === "function" ? supported("timeZone") : [];
  const list = $("#quiet-hours-gate-zones").empty();
  for (const zone of ["UTC", ...zones]) $("<option></option>").val(zone).appendTo(list);
}

/** The quiet-hours-gate's editor: what its registerType (nodes/quiet-hours-gate.html) refers to. */
export const quietHoursGate = {
  validate: {
    start: time("start"),
    end: time("end"),
    days,
    timezone,
    disposition,
    jitter: numberValidator(TYPE, "jitter"),
    exemptCategories,
    deferMax: numberValidator(TYPE, "deferMax"),
  },
  paletteLabel: (): string => own(`${TYPE}.paletteLabel`),
  label(this: EditorNode): string {
    if (typeof this.name === "string" && this.name !== "") return this.name;
    const window = own(`${TYPE}.label`, { start: typeof this.start === "string" && this.start !== "" ? this.start : "21:00", end: typeof this.end === "string" && this.end !== "" ? this.end : "08:00" });
    const days = daysLabel(this.days);
    return days === "" ? window : `${window} ${days}`;
  },
  labelStyle,
  inputLabels: inputLabel,
  outputLabels: outputLabel,
  oneditprepare(this: EditorNode): void {
    $("#node-input-jitter").spinner({ min: 0 });
    $("#node-input-deferMax").spinner({ min: 0 });
    showDefault(this, "start", "21:00");
    showDefault(this, "end", "08:00");
    showDefault(this, "timezone", "UTC");
    showDefault(this, "jitter", 900);
    showDefault(this, "deferMax", 86400);
    if (this.disposition !== "skip") $("#node-input-disposition").val("defer");
    prepareDays(this.days);
    prepareZones();
    $("#node-input-exemptCategoriesText").val(listText(this.exemptCategories));
    $("#node-input-start, #node-input-end").on("change keyup input", describeWindow);
    describeWindow();
    $("#node-input-disposition").on("change", function () {
      $(".quiet-hours-gate-defer-only").toggle($(this).val() !== "skip");
    }).trigger("change");
    prepareFieldInputs(this, gateFields[TYPE]);
  },
  oneditsave(this: EditorNode): void {
    const ticked: number[] = [];
    $("#quiet-hours-gate-days input[type=checkbox]").each(function () {
      if ($(this).prop("checked")) ticked.push(Number($(this).attr("data-day")));
    });
    this.days = ticked.sort((a, b) => a - b);
    this.exemptCategories = splitList($("#node-input-exemptCategoriesText").val());
  },
};
