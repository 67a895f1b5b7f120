import { gateFields } from "./gateFields";
import { inputLabel, labelStyle, numberValidator, outputLabel, showDefault } from "./gateCommon";
import { nodeTexts, verdict } from "./i18n";
import type { EditorNode, Validator } from "./red";
import { prepareFieldInputs } from "./sendFields";

const TYPE = "frequency-cap-gate";
const AVAILABLE_MODES = ["claim", "check", "record", "release"];
const own = nodeTexts(TYPE);

const mode: Validator = function (value, opt) {
  if (value === "" || value === undefined || (typeof value === "string" && AVAILABLE_MODES.includes(value))) return true;
  return verdict(own(`${TYPE}.errors.mode`, { mode: typeof value === "string" ? value : JSON.stringify(value) }), opt);
};

/** The frequency-cap-gate's editor: what its registerType (nodes/frequency-cap-gate.html) refers to. */
export const frequencyCapGate = {
  validate: {
    mode,
    deferMax: numberValidator(TYPE, "deferMax"),
    jitter: numberValidator(TYPE, "jitter"),
  },
  paletteLabel: (): string => own(`${TYPE}.paletteLabel`),
  label(this: EditorNode): string {
    if (typeof this.name === "string" && this.name !== "") return this.name;
    return this.mode && this.mode !== "claim" ? own(`${TYPE}.labelMode`, { mode: typeof this.mode === "string" ? this.mode : JSON.stringify(this.mode) }) : own(`${TYPE}.label`);
  },
  labelStyle,
  inputLabels: inputLabel,
  outputLabels: outputLabel,
  oneditprepare(this: EditorNode): void {
    $("#node-input-deferMax").spinner({ min: 0 });
    $("#node-input-jitter").spinner({ min: 0 });
    if (!this.mode) $("#node-input-mode").val("claim");
    showDefault(this, "deferMax", 21600);
    showDefault(this, "jitter", 900);
    // check, record and release never skip nor defer, and release reads no send (only msg.admission.claims)
    $("#node-input-mode").on("change", function () {
      const chosen = String($(this).val() || "claim");
      $(".frequency-cap-gate-claim-only").toggle(chosen === "claim");
      $(".frequency-cap-gate-send-fields").toggle(chosen !== "release");
      $(".frequency-cap-gate-release-tip").toggle(chosen === "release");
    });
    prepareFieldInputs(this, gateFields[TYPE]);
    $("#node-input-mode").trigger("change");
  },
};
