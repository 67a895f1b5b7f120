import { numberSettingProblem, type GateType } from "../../core/gateSettings";
import { t, verdict } from "./i18n";
import type { EditorNode, Validator } from "./red";

/** A named node's label is shown in italics, as core nodes do. */
export function labelStyle(this: EditorNode): string {
  return this.name ? "node_label_italic" : "";
}

/** Output port labels, in the SPEC §11 order. */
export function outputLabel(index: number): string {
  return t(`sendgate.ports.${["allowed", "skipped", "deferred"][index] ?? "allowed"}`);
}

export function inputLabel(): string {
  return t("sendgate.ports.send");
}

/**
 * A gate's numeric setting, checked against the bounds and worded as the
 * runtime's deploy check does (src/core/gateSettings.ts); left out
 * of a flow, it takes the runtime's default.
 */
export function numberValidator(type: GateType, property: string): Validator {
  return function (value, opt) {
    return verdict(numberSettingProblem(type, property, value, t), opt);
  };
}

/** A property the flow leaves out shows the default the runtime applies. */
export function showDefault(node: EditorNode, property: string, value: string | number): void {
  const v = node[property];
  if (v === undefined || v === null || v === "") $(`#node-input-${property}`).val(value);
}
