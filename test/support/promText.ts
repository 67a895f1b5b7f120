/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4):
 * every line must be a `# HELP`, a `# TYPE` or a sample of a family declared
 * before it; names, label sets and values must be well formed; a histogram's
 * buckets must be cumulative and end at +Inf with its _count. Anything else
 * throws, naming the line.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: "counter" | "gauge" | "histogram" | "summary" | "untyped";
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/;

function parseValue(text: string, line: number): number {
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  if (text === "NaN") return Number.NaN;
  if (!/^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`line ${line}: "${text}" is not a sample value`);
  return Number(text);
}

/** `a="x",b="y\"z"` into labels, refusing anything malformed or repeated. */
function parseLabels(text: string, line: number): Record<string, string> {
  const labels: Record<string, string> = Object.create(null) as Record<string, string>;
  let at = 0;
  while (at < text.length) {
    const eq = text.indexOf("=", at);
    if (eq < 0) throw new Error(`line ${line}: label without "=" in {${text}}`);
    const name = text.slice(at, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`line ${line}: bad label name "${name}"`);
    if (name in labels) throw new Error(`line ${line}: label "${name}" repeated`);
    if (text[eq + 1] !== '"') throw new Error(`line ${line}: label ${name} value not quoted`);
    let value = "";
    let i = eq + 2;
    for (; i < text.length && text[i] !== '"'; i++) {
      if (text[i] === "\\") {
        const next = text[++i];
        if (next === "n") value += "\n";
        else if (next === "\\" || next === '"') value += next;
        else throw new Error(`line ${line}: bad escape \\${next} in label ${name}`);
      } else {
        value += text[i];
      }
    }
    if (text[i] !== '"') throw new Error(`line ${line}: label ${name} value not closed`);
    labels[name] = value;
    at = i + 1;
    if (at < text.length) {
      if (text[at] !== ",") throw new Error(`line ${line}: expected "," after label ${name}`);
      at++;
    }
  }
  return labels;
}

/** The family a sample belongs to: its own name, or a histogram's / summary's with the suffix taken off. */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  const own = families.get(name);
  if (own) return own;
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (!name.endsWith(suffix)) continue;
    const family = families.get(name.slice(0, -suffix.length));
    if (family && (family.type === "histogram" || (family.type === "summary" && suffix !== "_bucket"))) return family;
  }
  return undefined;
}

function checkHistogram(family: Family): void {
  const series = new Map<string, { buckets: [number, number][]; count?: number }>();
  const keyOf = (labels: Record<string, string>) => JSON.stringify(Object.entries(labels).filter(([k]) => k !== "le").sort());
  for (const s of family.samples) {
    const key = keyOf(s.labels);
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (s.name.endsWith("_bucket")) {
      if (s.labels.le === undefined) throw new Error(`${s.name}: a bucket without le`);
      entry.buckets.push([parseValue(s.labels.le, 0), s.value]);
    } else if (s.name.endsWith("_count")) {
      entry.count = s.value;
    }
  }
  for (const [key, { buckets, count }] of series) {
    const last = buckets[buckets.length - 1];
    if (!last || last[0] !== Number.POSITIVE_INFINITY) throw new Error(`${family.name} ${key}: buckets do not end at +Inf`);
    for (let i = 1; i < buckets.length; i++) {
      const [le, n] = buckets[i];
      const [prevLe, prevN] = buckets[i - 1];
      if (!(le > prevLe) || n < prevN) throw new Error(`${family.name} ${key}: buckets not cumulative at le=${le}`);
    }
    if (count !== last[1]) throw new Error(`${family.name} ${key}: _count ${count} is not the +Inf bucket ${last[1]}`);
  }
}

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  if (!text.endsWith("\n")) throw new Error("the exposition must end with a newline");
  const lines = text.slice(0, -1).split("\n");
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw === "") return;
    if (raw.startsWith("# HELP ")) {
      const [, , familyName = "", ...help] = raw.split(" ");
      if (!NAME.test(familyName)) throw new Error(`line ${line}: bad metric name in HELP`);
      const family = families.get(familyName) ?? { name: familyName, type: "untyped" as const, help: "", samples: [] };
      if (family.help !== "") throw new Error(`line ${line}: second HELP for ${familyName}`);
      family.help = help.join(" ");
      families.set(familyName, family);
      return;
    }
    if (raw.startsWith("# TYPE ")) {
      const [, , familyName, type, ...rest] = raw.split(" ");
      if (!familyName || !NAME.test(familyName) || rest.length > 0) throw new Error(`line ${line}: bad TYPE line`);
      if (!["counter", "gauge", "histogram", "summary", "untyped"].includes(type ?? "")) throw new Error(`line ${line}: unknown type ${type}`);
      const family = families.get(familyName) ?? { name: familyName, type: "untyped" as const, help: "", samples: [] };
      if (family.samples.length > 0) throw new Error(`line ${line}: TYPE after samples of ${familyName}`);
      family.type = type as Family["type"];
      families.set(familyName, family);
      return;
    }
    if (raw.startsWith("#")) return; // a comment
    const m = SAMPLE.exec(raw);
    if (!m) throw new Error(`line ${line}: not a sample: ${raw}`);
    const [, name, labelText, valueText] = m as unknown as [string, string, string | undefined, string];
    const family = familyOf(name, families);
    if (!family) throw new Error(`line ${line}: sample ${name} of no declared family`);
    const value = parseValue(valueText, line);
    if (family.type === "counter" && !(value >= 0)) throw new Error(`line ${line}: counter ${name} is ${value}`);
    family.samples.push({ name, labels: labelText ? parseLabels(labelText, line) : (Object.create(null) as Record<string, string>), value });
  });
  for (const family of families.values()) {
    if (family.type === "histogram") checkHistogram(family);
    const seen = new Set<string>();
    for (const s of family.samples) {
      const key = `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;
      if (seen.has(key)) throw new Error(`${s.name}: the series ${key} appears twice`);
      seen.add(key);
    }
  }
  return families;
}

/** The samples of `name` whose labels include `match`. */
export function samples(families: Map<string, Family>, name: string, match: Record<string, string> = {}): Sample[] {
  const family = familyOf(name, families);
  if (!family) return [];
  return family.samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}

/** The sum of the samples of `name` whose labels include `match`. */
export function total(families: Map<string, Family>, name: string, match: Record<string, string> = {}): number {
  return samples(families, name, match).reduce((sum, s) => sum + s.value, 0);
}
