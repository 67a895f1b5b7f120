/**
 * Message catalogs, the Node-RED way: nested JSON objects whose leaves are
 * texts with `__name__` placeholders (Node-RED's i18next settings). Pure: the
 * editor bundles this file too, so both sides word a message the same way.
 */
/**
 * The package's shared message catalog is cap-config's (every gate needs a
 * cap-config, so its catalog is always loaded): Node-RED registers it under
 * this namespace, and the editor and the runtime read the same file.
 */
export const CATALOG_NAMESPACE = "@sendgate/node-red-frequency-cap/cap-config";

export type MessageParams = Readonly<Record<string, string | number>>;

/** A key such as `sendgate.rules.problem.required` and its placeholders → the text. */
export type Translate = (key: string, params?: MessageParams) => string;

/** Fills `__name__` placeholders; an unknown one is left as it is, so a missing param shows. */
export function interpolate(template: string, params: MessageParams = {}): string {
  return template.replace(/__([A-Za-z0-9_]+)__/g, (whole, name: string) =>
    Object.prototype.hasOwnProperty.call(params, name) ? String(params[name]) : whole);
}

/** The text at a dotted key of a catalog, or undefined when there is none. */
export function lookup(catalog: unknown, key: string): string | undefined {
  let at: unknown = catalog;
  for (const part of key.split(".")) {
    if (typeof at !== "object" || at === null || !Object.prototype.hasOwnProperty.call(at, part)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return typeof at === "string" ? at : undefined;
}

/** Translates from one catalog object; a missing key comes back as the key, as i18next does. */
export function catalogTranslator(catalog: unknown): Translate {
  return (key, params) => {
    const template = lookup(catalog, key);
    return template === undefined ? key : interpolate(template, params);
  };
}
