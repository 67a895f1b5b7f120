import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { catalogTranslator, type Translate } from "./messages";

export { CATALOG_NAMESPACE } from "./messages";
const CATALOG_PATH = join("nodes", "locales", "en-US", "cap-config.json");

/** The package root: the nearest folder above this file that holds the catalog (src/… or dist/src/…). */
function catalogFile(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const candidate = join(dir, CATALOG_PATH);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`message catalog ${CATALOG_PATH} not found above ${__dirname}`);
  }
}

let english: Translate | undefined;

/** The en-US texts, read once from the catalog file: for code that runs outside Node-RED's i18n (admin API, PostgreSQL loader, tests). */
export function englishMessages(): Translate {
  english ??= catalogTranslator(JSON.parse(readFileSync(catalogFile(), "utf8")) as unknown);
  return english;
}
