import type { SidebarTranslate } from "./words";

/**
 * Whether a gate works, from what the editor knows of it: its own validation
 * (the dialog's checks, the same the deploy check makes), its cap-config's,
 * and the status the runtime gave the deployed node. A gate whose cap-config
 * the runtime refused sends no counts at all, and one with a bad setting
 * counts nothing: their counts alone would show them idle and healthy.
 */

/** A gate as the editor holds it, in plain data. */
export interface EditorGate {
  id: string;
  type: string;
  label: string;
  /** its flow tab (or subflow) */
  tab: string;
  /** its cap-config's id, "" when none is chosen */
  config: string;
  /** the editor's validation: false with the reasons in validationErrors */
  valid: boolean;
  validationErrors: readonly string[];
  /** the status the runtime last gave the deployed node */
  status: { fill?: string; shape?: string; text?: string } | null;
  disabled: boolean;
  /** edited since the last deploy */
  changed: boolean;
}

export interface EditorConfig {
  id: string;
  name: string;
  valid: boolean;
  validationErrors: readonly string[];
}

export interface Problem {
  /** "flow": the flow as edited says so (fix it, then deploy); "runtime": the deployed node says so */
  where: "flow" | "runtime";
  text: string;
}

/** A property name alone (a validator that gives no reason) rather than a sentence. */
const BARE_PROPERTY = /^[A-Za-z_$][\w$]*$/;

function configProblem(gate: EditorGate, configs: ReadonlyMap<string, EditorConfig>, configName: string, t: SidebarTranslate): Problem | null {
  if (gate.config === "") return { where: "flow", text: t("problem.noConfig") };
  const config = configs.get(gate.config);
  if (!config) return { where: "flow", text: t("problem.missingConfig") };
  if (config.valid) return null;
  const reasons = config.validationErrors.length > 0 ? config.validationErrors.join("; ") : t("problem.noReason");
  return { where: "flow", text: t("problem.configInvalid", { config: configName, problems: reasons }) };
}

/** What stops a gate, first what the flow as edited says, then what the deployed node says; none for a disabled gate. */
export function gateProblems(gate: EditorGate, configs: ReadonlyMap<string, EditorConfig>, configName: string, t: SidebarTranslate): Problem[] {
  if (gate.disabled) return [];
  const problems: Problem[] = [];
  const ofConfig = configProblem(gate, configs, configName, t);
  if (ofConfig) problems.push(ofConfig);
  if (!gate.valid) {
    for (const reason of gate.validationErrors) {
      // the cap-config reference: its own problem, above, says more
      if (reason === "config") continue;
      problems.push({ where: "flow", text: BARE_PROPERTY.test(reason) ? t("problem.invalidProperty", { property: reason }) : reason });
    }
  }
  if (gate.status?.fill === "red" && gate.status.text) problems.push({ where: "runtime", text: gate.status.text });
  return problems;
}
