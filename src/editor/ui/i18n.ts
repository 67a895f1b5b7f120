import { CATALOG_NAMESPACE, type MessageParams, type Translate } from "../../core/schema/messages";

const MODULE = "@sendgate/node-red-frequency-cap";

/** Texts of one node set's catalog (nodes/locales/<lang>/<type>.json), through the editor's i18n. */
export function catalogOf(namespace: string): Translate {
  return (key: string, params?: MessageParams) => {
    const full = `${namespace}:${key}`;
    const text = RED._(full, params);
    // i18next answers a missing key with the key: show the key alone, which a test looks for
    return text === full ? key : text;
  };
}

/** The shared texts (cap-config's catalog: every gate needs a cap-config, so it is always loaded). */
export const t: Translate = catalogOf(CATALOG_NAMESPACE);

/** A gate's own texts. */
export function nodeTexts(type: string): Translate {
  return catalogOf(`${MODULE}/${type}`);
}

/** `opt ? reason : false`: the form every editor validator answers in. */
export function verdict(problem: string | null, opt: unknown): boolean | string {
  if (problem === null) return true;
  return opt ? problem : false;
}
