import { isAbsent, THROUGHPUT_KEY_TYPES, throughputKeyProblem } from "../../core/settingsChecks";
import { gateFields } from "./gateFields";
import { inputLabel, labelStyle, numberValidator, outputLabel, showDefault } from "./gateCommon";
import { nodeTexts, verdict } from "./i18n";
import type { EditorNode, Validator } from "./red";
import { prepareFieldInputs } from "./sendFields";

const TYPE = "throughput-gate";
const own = nodeTexts(TYPE);

const disposition: Validator = function (value, opt) {
  if (isAbsent(value) || value === "queue" || value === "skip") return true;
  return verdict(own(`${TYPE}.errors.disposition`, { value: JSON.stringify(value) }), opt);
};

/** The key: org and org + channel need nothing more; any other source needs its property or expression. */
const key: Validator = function (value, opt) {
  const problem = throughputKeyProblem(this.keyType, value);
  if (problem === "keyType") return verdict(own(`${TYPE}.errors.keyType`, { value: JSON.stringify(this.keyType) }), opt);
  return problem === "key" ? verdict(own(`${TYPE}.errors.key`), opt) : true;
};

/** "10/s", "50 / 2 s", "1,000/min": how the node's label says its ceiling. */
export function ceilingText(rate: unknown, interval: unknown): string {
  const r = isAbsent(rate) ? 10 : Number(rate);
  const i = isAbsent(interval) ? 1 : Number(interval);
  const count = r.toLocaleString("en-US");
  if (i === 1) return `${count}/s`;
  if (i === 60) return `${count}/min`;
  if (i === 3600) return `${count}/h`;
  return `${count} / ${i} s`;
}

/** The throughput-gate's editor: what its registerType (nodes/throughput-gate.html) refers to. */
export const throughputGate = {
  validate: {
    rate: numberValidator(TYPE, "rate"),
    interval: numberValidator(TYPE, "interval"),
    burst: numberValidator(TYPE, "burst"),
    maxWait: numberValidator(TYPE, "maxWait"),
    disposition,
    key,
  },
  paletteLabel: (): string => own(`${TYPE}.paletteLabel`),
  label(this: EditorNode): string {
    if (typeof this.name === "string" && this.name !== "") return this.name;
    return own(`${TYPE}.label`, { ceiling: ceilingText(this.rate, this.interval) });
  },
  labelStyle,
  inputLabels: (): string => own(`${TYPE}.inputLabel`) || inputLabel(),
  outputLabels: outputLabel,
  oneditprepare(this: EditorNode): void {
    $("#node-input-rate").spinner({ min: 0 });
    $("#node-input-burst").spinner({ min: 1 });
    showDefault(this, "rate", 10);
    showDefault(this, "interval", 1);
    showDefault(this, "maxWait", 60);
    if (this.disposition !== "skip") $("#node-input-disposition").val("queue");
    if (isAbsent(this.keyType)) $("#node-input-keyType").val("org");
    $("#node-input-key").typedInput({
      default: "org",
      typeField: $("#node-input-keyType"),
      types: [
        { value: "org", label: own(`${TYPE}.keys.org`), hasValue: false },
        { value: "channel", label: own(`${TYPE}.keys.channel`), hasValue: false },
        ...THROUGHPUT_KEY_TYPES.filter((type) => type !== "org" && type !== "channel"),
      ],
    });
    // burst left empty is the rate (a second's worth at once)
    $("#node-input-burst").attr("placeholder", own(`${TYPE}.burstDefault`));
    $("#node-input-disposition").on("change", function () {
      $(".throughput-gate-queue-only").toggle($(this).val() !== "skip");
    }).trigger("change");
    prepareFieldInputs(this, gateFields[TYPE]);
  },
};
