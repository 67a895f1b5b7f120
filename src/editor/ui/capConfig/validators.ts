import { deployProblem } from "../../model/ruleChecks";
import {
  historySizeProblem, keyPrefixProblem, leaseSecondsProblem, maxQueuedProblem, oneOfProblem, parkedRulesProblem, pgTableProblem, redisNodesProblem, redisUrlProblem,
  stringListProblem, timeoutProblem,
} from "../../../core/settingsChecks";
import { t, verdict } from "../i18n";
import type { EditorNode, Validator } from "../red";
import { editingValue, knownChannels } from "./channels";

/**
 * cap-config's `defaults` validators. A property a hand-written flow leaves out
 * (or empty) takes the runtime's default (SPEC §11, src/core/capSettings.ts),
 * so each accepts it absent.
 */
function check(problem: (this: EditorNode, value: unknown) => string | null): Validator {
  return function (value, opt) {
    return verdict(problem.call(this, value), opt);
  };
}

const storeOf = (node: EditorNode): unknown => editingValue("node-config-input-store", node.store);
const sourceOf = (node: EditorNode): unknown => editingValue("node-config-input-rulesSource", node.rulesSource);

export const capConfigValidators: Record<string, Validator> = {
  store: check((v) => oneOfProblem(v, ["memory", "redis", "redis-cluster"], t)),
  redisUrl: check(function (v) { return storeOf(this) === "redis" ? redisUrlProblem(v, t) : null; }),
  redisNodes: check(function (v) { return storeOf(this) === "redis-cluster" ? redisNodesProblem(v, t) : null; }),
  keyPrefix: check((v) => keyPrefixProblem(v, t)),
  rulesSource: check((v) => oneOfProblem(v, ["inline", "postgres"], t)),
  rules: check(function (v) {
    if (sourceOf(this) === "postgres") return parkedRulesProblem(v, t);
    return deployProblem(v, knownChannels(editingValue("node-config-input-channelsText", this.channels)), t);
  }),
  pgTable: check(function (v) { return sourceOf(this) === "postgres" ? pgTableProblem(v, t) : null; }),
  failMode: check((v) => oneOfProblem(v, ["open", "closed"], t)),
  overloadMode: check((v) => oneOfProblem(v, ["closed", "open"], t)),
  timeoutMs: check((v) => timeoutProblem(v, t)),
  maxQueued: check((v) => maxQueuedProblem(v, t)),
  leaseSeconds: check((v) => leaseSecondsProblem(v, t)),
  historySize: check((v) => historySizeProblem(v, t)),
  exemptTiers: check((v) => stringListProblem(v, t)),
  channels: check((v) => stringListProblem(v, t)),
  hashRecipients: check(function (v) {
    if (v !== true && v !== "true") return null;
    const secret = $("#node-config-input-hmacSecret");
    const creds = (this.credentials ?? {}) as { has_hmacSecret?: boolean; hmacSecret?: string };
    const hasSecret = secret.length > 0 ? secret.val() !== "" : creds.has_hmacSecret !== false || Boolean(creds.hmacSecret);
    return hasSecret ? null : t("cap-config.errors.hmacSecret");
  }),
};

export function capConfigLabel(this: EditorNode): string {
  if (typeof this.name === "string" && this.name !== "") return this.name;
  const store = typeof this.store === "string" && this.store !== "" ? this.store : "memory";
  if (this.rulesSource === "postgres") return t("cap-config.label.postgres", { store });
  const count = Array.isArray(this.rules) ? this.rules.length : 0;
  return count === 1 ? t("cap-config.label.oneCap", { store }) : t("cap-config.label.caps", { store, count });
}
