import { gateFields } from "./gateFields";
import { labelStyle, numberValidator, outputLabel, showDefault } from "./gateCommon";
import { nodeTexts } from "./i18n";
import type { EditorNode } from "./red";
import { prepareFieldInputs } from "./sendFields";

const TYPE = "suppression-gate";
const own = nodeTexts(TYPE);

/** The suppression-gate's editor: what its registerType (nodes/suppression-gate.html) refers to. */
export const suppressionGate = {
  validate: {
    duplicateWindow: numberValidator(TYPE, "duplicateWindow"),
  },
  paletteLabel: (): string => own(`${TYPE}.paletteLabel`),
  label(this: EditorNode): string {
    if (typeof this.name === "string" && this.name !== "") return this.name;
    return Number(this.duplicateWindow) === 0 && this.duplicateWindow !== "" ? own(`${TYPE}.labelNoDuplicates`) : own(`${TYPE}.label`);
  },
  labelStyle,
  inputLabels: (): string => own(`${TYPE}.inputLabel`),
  outputLabels: outputLabel,
  oneditprepare(this: EditorNode): void {
    $("#node-input-duplicateWindow").spinner({ min: 0 });
    showDefault(this, "duplicateWindow", 86400);
    prepareFieldInputs(this, gateFields[TYPE]);
  },
};
