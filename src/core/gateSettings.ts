/**
 * The bounds of every gate's own numeric settings and quiet-hours times,
 * and the one way each problem is worded: the dialogs (src/editor/ui) check
 * a value with these, and the runtime's deploy check reads the
 * same ones, so the dialog and a node's red status say the same thing about
 * the same value.
 *
 * Pure: no DOM, no Node-RED, no import. The wording comes from the shared
 * message catalog (nodes/locales/<lang>/cap-config.json, `sendgate.settings`)
 * through the `Translate` the caller passes: the editor's RED._, or the
 * runtime's catalog reader. Every message starts with the property's name
 * (`deferMax: …`), as the runtime's errors do (SPEC §3), then the label the
 * dialog shows it under.
 */
import { SettingError } from "./errors";

/** A key such as `sendgate.settings.problem` and its placeholders → the text (structurally src/core/schema/messages' Translate). */
export type Translate = (key: string, params?: Readonly<Record<string, string | number>>) => string;

export type GateType = "frequency-cap-gate" | "quiet-hours-gate" | "suppression-gate" | "throughput-gate";

/** How a value is read and which rule text says so. */
export type NumberKind =
  /** whole seconds from min to max */
  | "wholeSeconds"
  /** seconds from min to max, fractions allowed */
  | "seconds"
  /** seconds above min (min itself refused), fractions allowed */
  | "secondsAbove"
  /** a whole number from min to max */
  | "whole"
  /** a number above min (min itself refused) */
  | "numberAbove";

export interface NumberField {
  kind: NumberKind;
  min: number;
  max: number;
  /** what the runtime takes when the flow leaves the property out; "rate" is the throughput-gate's burst, a second's worth */
  fallback: number | "rate";
  /** an empty text (an input the author cleared) takes the fallback too; otherwise empty is a problem */
  emptyTakesFallback: boolean;
}

/** 366 days: the longest window a cap may have, so a msg held until such a cap frees can wait that long. */
const LONGEST_HOLD = 31_622_400;
const DAY = 86_400;
const WEEK = 604_800;

const seconds = (kind: NumberKind, min: number, max: number, fallback: number): NumberField => ({ kind, min, max, fallback, emptyTakesFallback: false });

/**
 * Every gate's numeric settings (SPEC §11). Why each bound:
 * - deferMax from 0 (0: a msg that would be held is skipped at once, defer_expired) to 366 days;
 * - jitter up to a day: it spreads releases after a reset or a night, not across days;
 * - duplicateWindow from 0 (off) to 366 days, as long as a cap's window;
 * - rate up to 1,000,000 and burst up to 1,000,000: the ceiling is kept in whole microseconds,
 *   so nothing faster can be paced, and (burst − 1) × the emission interval stays an exact integer;
 * - interval above 0, up to a day; maxWait up to a week: a queued msg waits on a timer, and
 *   Node's timers cannot wait longer than 24.8 days.
 */
export const GATE_NUMBER_FIELDS: Readonly<Record<GateType, Readonly<Record<string, NumberField>>>> = {
  "frequency-cap-gate": {
    deferMax: seconds("wholeSeconds", 0, LONGEST_HOLD, 21_600),
    jitter: seconds("wholeSeconds", 0, DAY, 900),
  },
  "quiet-hours-gate": {
    jitter: seconds("wholeSeconds", 0, DAY, 900),
    // a day, not 6 h: the default window (21:00–08:00) alone lasts 11 h
    deferMax: seconds("wholeSeconds", 0, LONGEST_HOLD, DAY),
  },
  "suppression-gate": {
    duplicateWindow: seconds("wholeSeconds", 0, LONGEST_HOLD, DAY),
  },
  "throughput-gate": {
    rate: { kind: "numberAbove", min: 0, max: 1_000_000, fallback: 10, emptyTakesFallback: false },
    interval: seconds("secondsAbove", 0, DAY, 1),
    // the dialog's empty burst is the rate, as its placeholder says
    burst: { kind: "whole", min: 1, max: 1_000_000, fallback: "rate", emptyTakesFallback: true },
    maxWait: seconds("seconds", 0, WEEK, 60),
  },
};

/** The quiet-hours-gate's times and what the runtime takes when the flow leaves them out. */
export const QUIET_TIME_FIELDS: Readonly<Record<"start" | "end", string>> = { start: "21:00", end: "08:00" };

/** What a setting reads as: its number, the fallback (absent), or the problem's text. */
export type SettingRead = { value: number } | { fallback: true } | { problem: string };

const NUMBER_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const TIME_OF_DAY = /^(\d{1,2}):(\d{2})$/;

/** Left out of a flow: the runtime's default applies (SPEC §11). */
function isLeftOut(value: unknown): boolean {
  return value === undefined || value === null;
}

/** A number, or decimal text as the dialog's inputs hold it ("60", " 0.5 "); anything else (true, "0x10", "") is NaN. */
function numberOf(value: unknown): number {
  if (typeof value === "number") return value;
  if (typeof value !== "string") return Number.NaN;
  const text = value.trim();
  return NUMBER_TEXT.test(text) ? Number(text) : Number.NaN;
}

function withinBounds(n: number, field: NumberField): boolean {
  if (!Number.isFinite(n) || n > field.max) return false;
  const whole = field.kind === "wholeSeconds" || field.kind === "whole";
  if (whole && !Number.isInteger(n)) return false;
  const above = field.kind === "secondsAbove" || field.kind === "numberAbove";
  return above ? n > field.min : n >= field.min;
}

/** 31622400 → "31,622,400": how the bounds read in every message. */
function grouped(n: number): string {
  const [whole = "", fraction] = String(n).split(".");
  const sign = whole.startsWith("-") ? "-" : "";
  const digits = whole.replace("-", "").replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return sign + digits + (fraction !== undefined ? `.${fraction}` : "");
}

function shown(value: unknown): string {
  if (value === undefined) return "nothing";
  try {
    return JSON.stringify(value) ?? typeof value;
  } catch {
    return typeof value;
  }
}

/** The rule a field's value must follow, as the catalog words it ("whole seconds from 0 to 86,400"). */
export function numberRule(field: NumberField, t: Translate): string {
  return t(`sendgate.settings.rule.${field.kind}`, { min: grouped(field.min), max: grouped(field.max) });
}

function problemText(property: string, rule: string, value: unknown, t: Translate): string {
  return t("sendgate.settings.problem", { field: property, label: t(`sendgate.settings.label.${property}`), rule, value: shown(value) });
}

function fieldOf(type: GateType, property: string): NumberField {
  const field = GATE_NUMBER_FIELDS[type][property];
  if (!field) throw new Error(`${type} has no numeric setting ${property}`);
  return field;
}

/** Reads a gate's numeric setting as the flow holds it. */
export function readNumberSetting(type: GateType, property: string, value: unknown, t: Translate): SettingRead {
  const field = fieldOf(type, property);
  if (isLeftOut(value) || (value === "" && field.emptyTakesFallback)) return { fallback: true };
  const n = numberOf(value);
  return withinBounds(n, field) ? { value: n } : { problem: problemText(property, numberRule(field, t), value, t) };
}

/** The problem with a gate's numeric setting, or null: what a dialog's validator asks. */
export function numberSettingProblem(type: GateType, property: string, value: unknown, t: Translate): string | null {
  const read = readNumberSetting(type, property, value, t);
  return "problem" in read ? read.problem : null;
}

/**
 * A gate's numeric setting for the runtime: the number, or the fallback when
 * the flow leaves it out (`rate`: the throughput-gate's rate, for its burst);
 * a bad value throws an Error whose message is the problem's text.
 */
export function numberSetting(type: GateType, property: string, value: unknown, t: Translate, rate?: number): number {
  const read = readNumberSetting(type, property, value, t);
  if ("problem" in read) throw new SettingError(property, read.problem, t(`sendgate.settings.label.${property}`));
  if ("value" in read) return read.value;
  const { fallback } = fieldOf(type, property);
  if (fallback !== "rate") return fallback;
  return Math.min(fieldOf("throughput-gate", "burst").max, Math.max(1, Math.round(rate ?? 10)));
}

/** A quiet-hours time as the runtime reads it: a problem throws a SettingError with the dialog's words. */
export function checkQuietTime(property: "start" | "end", value: unknown, t: Translate): void {
  const problem = quietTimeProblem(property, value, t);
  if (problem) throw new SettingError(property, problem, t(`sendgate.settings.label.${property}`));
}

/** A quiet-hours time (`start`, `end`): left out takes the default; empty or not HH:MM from 00:00 to 23:59 is a problem. */
export function quietTimeProblem(property: "start" | "end", value: unknown, t: Translate): string | null {
  if (isLeftOut(value)) return null;
  const m = typeof value === "string" ? TIME_OF_DAY.exec(value) : null;
  if (m !== null && Number(m[1]) <= 23 && Number(m[2]) <= 59) return null;
  return problemText(property, t("sendgate.settings.rule.timeOfDay"), value, t);
}
