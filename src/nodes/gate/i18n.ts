import type { NodeAPI } from "node-red";
import { CATALOG_NAMESPACE, englishMessages } from "../../core/schema/catalog";
import type { Translate } from "../../core/schema/messages";

/**
 * The package's texts through Node-RED's i18n, as core nodes get theirs
 * (RED._, in the runtime's language), from the shared catalog of cap-config.
 * Where Node-RED has no text for a key (the test helper's RED._ answers the
 * key itself) the en-US catalog file answers.
 */
export function runtimeMessages(RED: NodeAPI): Translate {
  const english = englishMessages();
  return (key, params) => {
    const full = `${CATALOG_NAMESPACE}:${key}`;
    const text = RED._(full, params);
    return typeof text !== "string" || text === full || text === key ? english(key, params) : text;
  };
}
