import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { COUNTS, DISPOSITIONS, ENFORCEMENTS, WINDOW_TYPES } from "../src/core/schema/capRuleSchema";
import { lookup } from "../src/core/schema/messages";
import type { RuleProblemCode } from "../src/core/schema/ruleProblems";
import { GATE_NUMBER_FIELDS, QUIET_TIME_FIELDS } from "../src/core/gateSettings";
import { WINDOW_UNITS } from "../src/editor/model/ruleRows";
import { SEND_FIELDS } from "../src/nodes/gate/sendReader";
import { ROOT } from "./support/nodeRedProcess";

const LOCALES = join(ROOT, "nodes", "locales", "en-US");
const PACKAGE = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { "node-red": { nodes: Record<string, string> } };
const TYPES = Object.keys(PACKAGE["node-red"].nodes);
const SHARED = "@sendgate/node-red-frequency-cap/cap-config";

function catalog(name: string): unknown {
  return JSON.parse(readFileSync(join(LOCALES, `${name}.json`), "utf8")) as unknown;
}

/** Node-RED's own catalog, for the `node-red:` keys our templates borrow (Name…). */
const NODE_RED = JSON.parse(readFileSync(require.resolve("@node-red/nodes/locales/en-US/messages.json"), "utf8")) as unknown;

/** Which catalog a key of our own lives in: shared texts in cap-config's, a gate's in its own. */
function catalogOfKey(key: string): string {
  const type = TYPES.find((t) => key.startsWith(`${t}.`));
  return type === undefined || key.startsWith("sendgate.") ? "cap-config" : type;
}

function assertKey(key: string, where: string, inCatalog = catalogOfKey(key)): void {
  assert.ok(lookup(catalog(inCatalog), key) !== undefined, `${where}: "${key}" is missing from locales/en-US/${inCatalog}.json`);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith(".ts") ? [path] : [];
  });
}

/**
 * Keys built from a variable, and every value the code gives that variable:
 * each expansion must be in the catalog. A new family of keys that this list
 * does not know fails the test, so it cannot slip past.
 */
const STATUS_KEYS = ["allowed", "skipped", "recorded", "released", "held", "rate", "queued", "caught", "listChanges"];
const PROBLEM_CODES: RuleProblemCode[] = ["notArray", "notJson", "notObject", "unknownProperty", "required", "text", "name", "boolean", "scope",
  "wholeNumber", "windowSeconds", "oneOf", "list", "uniqueItems", "maxItems", "match", "matchValues", "timestamp",
  "channelMissing", "channelStar", "globalChannel", "unknownChannel", "duplicateId", "everyOrgId", "lifetimeTotal"];
const FAMILIES: Record<string, string[]> = {
  "sendgate.fields.${field}": SEND_FIELDS.map((f) => `sendgate.fields.${f}`),
  "sendgate.ports.${": ["allowed", "skipped", "deferred"].map((p) => `sendgate.ports.${p}`),
  "sendgate.status.${key}": STATUS_KEYS.map((k) => `sendgate.status.${k}`),
  "sendgate.rules.problem.${p.code}": PROBLEM_CODES.map((c) => `sendgate.rules.problem.${c}`),
  "sendgate.rules.problem.${parsed.problem.key}": ["notJson", "notArray", "notObject"].map((c) => `sendgate.rules.problem.${c}`),
  "sendgate.rules.input.${problem.key}": ["listJson", "matchJson", "matchSyntax", "matchEmpty", "matchTwice"].map((k) => `sendgate.rules.input.${k}`),
  "sendgate.settings.rule.${field.kind}": [...new Set(Object.values(GATE_NUMBER_FIELDS).flatMap((fields) => Object.values(fields).map((f) => f.kind)))]
    .map((k) => `sendgate.settings.rule.${k}`),
  "sendgate.settings.label.${property}": [...Object.values(GATE_NUMBER_FIELDS).flatMap((fields) => Object.keys(fields)), ...Object.keys(QUIET_TIME_FIELDS)]
    .map((p) => `sendgate.settings.label.${p}`),
  "cap-config.tabs.${name}": ["store", "rules", "sends"].map((n) => `cap-config.tabs.${n}`),
  "cap-config.units.${u.value}": WINDOW_UNITS.map((u) => `cap-config.units.${u.value}`),
  "cap-config.windowTypes.${w}": WINDOW_TYPES.map((w) => `cap-config.windowTypes.${w}`),
  "cap-config.windowTypes.${w}Title": WINDOW_TYPES.map((w) => `cap-config.windowTypes.${w}Title`),
  "cap-config.dispositions.${d}": DISPOSITIONS.map((d) => `cap-config.dispositions.${d}`),
  "cap-config.dispositions.${d}Title": DISPOSITIONS.map((d) => `cap-config.dispositions.${d}Title`),
  "cap-config.enforcements.${e}": ENFORCEMENTS.map((e) => `cap-config.enforcements.${e}`),
  "cap-config.enforcements.${e}Title": ENFORCEMENTS.map((e) => `cap-config.enforcements.${e}Title`),
  "cap-config.counts.${c}": COUNTS.map((c) => `cap-config.counts.${c}`),
  "cap-config.counts.${c}Title": COUNTS.map((c) => `cap-config.counts.${c}Title`),
  "quiet-hours-gate.dayNames.${day}": [0, 1, 2, 3, 4, 5, 6].map((d) => `quiet-hours-gate.dayNames.${d}`),
  "quiet-hours-gate.days.${kind.kind}": ["none", "weekdays"].map((k) => `quiet-hours-gate.days.${k}`),
  "quiet-hours-gate.window.${windowShape(start, end)}": ["badTimes", "wholeDay", "acrossMidnight", "sameDay"].map((k) => `quiet-hours-gate.window.${k}`),
};

/** `const NAME = "…"` and `` const NAME = `${OTHER}.x` `` of a source file, for the prefixes keys are built from. */
function constantsOf(source: string): Record<string, string> {
  const found: Record<string, string> = { RULE_MESSAGES: "sendgate.rules" };
  for (const m of source.matchAll(/const ([A-Z_]+) = ["`]([^"`]*)["`]/g)) {
    found[m[1]] = m[2].replace(/\$\{([A-Z_]+)\}/g, (whole, name: string) => found[name] ?? whole);
  }
  return found;
}

const KEY_LITERAL = /["'`]((?:\$\{[A-Z_]+\}|cap-config|sendgate|frequency-cap-gate|suppression-gate|quiet-hours-gate)\.(?:\$\{[^}]*\}|[^"'`\s$])*)["'`]/g;

describe("i18n: every text comes from locales/en-US", () => {
  it("has each key the editor and the runtime ask for, in the catalog they ask", () => {
    const sources = [...filesUnder(join(ROOT, "src", "editor")), ...filesUnder(join(ROOT, "src", "nodes")), ...filesUnder(join(ROOT, "src", "core", "schema"))];
    let checked = 0;
    for (const file of sources) {
      // comments name keys in prose; only code asks for them
      const source = readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
      const constants = constantsOf(source);
      for (const m of source.matchAll(KEY_LITERAL)) {
        // a prefix that keys are built from (const K = "cap-config.errors") is not a key
        if (/const [A-Z_]+ = $/.test(source.slice(0, m.index)) || /\.(json|html|svg)$/.test(m[1])) continue;
        const key = m[1].replace(/\$\{([A-Z_]+)\}/g, (whole, name: string) => constants[name] ?? whole);
        if (!key.includes("${")) {
          assertKey(key, file);
        } else {
          const family = Object.keys(FAMILIES).find((f) => key === f || key.startsWith(f));
          assert.ok(family, `${file}: keys built as "${key}" are not enumerated in test/i18n.test.ts FAMILIES`);
          for (const expanded of FAMILIES[family] ?? []) assertKey(expanded, `${file} (${key})`);
        }
        checked++;
      }
    }
    assert.ok(checked > 100, `only ${checked} keys found: the scan is broken`);
  });

  it("has each key the dialog templates ask for", () => {
    for (const type of TYPES) {
      const html = readFileSync(join(ROOT, "nodes", `${type}.html`), "utf8");
      const keys = [...html.matchAll(/data-i18n="([^"]+)"/g)].flatMap((m) => m[1].split(";")).map((k) => k.replace(/^\[[a-z]+\]/, ""));
      assert.ok(keys.length > 5, `${type}: no data-i18n keys found`);
      for (const key of keys) {
        if (key.startsWith("node-red:")) assert.ok(lookup(NODE_RED, key.slice("node-red:".length)) !== undefined, `${type}.html: ${key}`);
        else if (key.startsWith(`${SHARED}:`)) assertKey(key.slice(SHARED.length + 1), `${type}.html`, "cap-config");
        else assertKey(key, `${type}.html`, type);
      }
    }
  });

  it("writes no text in the templates: every label, option and tip is a key", () => {
    for (const type of TYPES) {
      const html = readFileSync(join(ROOT, "nodes", `${type}.html`), "utf8");
      const start = html.indexOf("data-template-name");
      const template = html.slice(html.indexOf(">", start) + 1);
      const text = template.replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim();
      assert.equal(text, "", `${type}.html shows text that no catalog holds: ${text}`);
    }
  });
});

describe("help: like the core nodes'", () => {
  for (const type of TYPES) {
    it(`${type}: one sentence, then the core sections, 350–650 words, in locales/en-US/${type}.html`, () => {
      const html = readFileSync(join(LOCALES, `${type}.html`), "utf8");
      assert.match(html, new RegExp(`^<script type="text/html" data-help-name="${type}">`));
      const first = /<script[^>]*>\s*<p>([^<]*)<\/p>/.exec(html)?.[1] ?? "";
      assert.match(first, /^[A-Z][^.]*\.$/, `the first paragraph (the palette tooltip) is one sentence: ${first}`);
      const sections = [...html.matchAll(/<h3>([^<]+)<\/h3>/g)].map((m) => m[1]);
      assert.deepEqual(sections, type === "cap-config" ? ["Properties", "Details", "References"] : ["Inputs", "Outputs", "Details", "References"]);
      const words = html.replace(/<[^>]*>/g, " ").split(/\s+/).filter((w) => w !== "").length;
      assert.ok(words >= 350 && words <= 650, `${words} words`);
      assert.ok(!readFileSync(join(ROOT, "nodes", `${type}.html`), "utf8").includes("data-help-name"), "the help lives only in locales/");
    });
  }

  it("keeps in each node's .html only its templates and a registerType", () => {
    for (const type of TYPES) {
      const html = readFileSync(join(ROOT, "nodes", `${type}.html`), "utf8");
      const scripts = [...html.matchAll(/<script type="text\/javascript">([\s\S]*?)<\/script>/g)].map((m) => m[1].replace(/^\s*\/\/.*$/gm, "").trim());
      assert.equal(scripts.length, 1, type);
      assert.match(scripts[0] ?? "", new RegExp(`^RED\\.nodes\\.registerType\\("${type}", \\{[\\s\\S]*\\}\\);$`));
      assert.equal((scripts[0]?.match(/registerType/g) ?? []).length, 1);
    }
  });
});
