import { SendFieldError } from "../errors";
import { attributeRecord } from "../send";

/** The most candidates one check answers (SPEC §5 check mode): a bid request's ads, not a catalogue. */
export const MAX_CANDIDATES = 500;

/** One candidate of a check (an ad): its key in the answer, and the attributes caps are split and matched by. */
export interface Candidate {
  /** its `id`, else its index in `msg.candidates` */
  key: string;
  /** null-prototype: attribute names are the caller's */
  attributes: Record<string, string>;
  /** its `category`, when it has one: the category of this candidate's send */
  category?: string;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * `msg.candidates` as the check reads it: an array of at most MAX_CANDIDATES
 * objects whose values are strings (or numbers, read as strings). Undefined
 * when the msg has none (it checks its own send). A bad one is refused whole,
 * naming the index and field.
 */
export function parseCandidates(value: unknown): Candidate[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw new SendFieldError("candidates", "must be an array of attribute objects");
  if (value.length > MAX_CANDIDATES) throw new SendFieldError("candidates", `at most ${MAX_CANDIDATES} per check, got ${value.length}`);
  const seen = new Map<string, number>();
  return value.map((item: unknown, index) => {
    if (!isPlainObject(item)) throw new SendFieldError(`candidates[${index}]`, `must be an object of attributes, got ${Array.isArray(item) ? "an array" : item === null ? "null" : typeof item}`);
    const attributes = attributeRecord(item, `candidates[${index}]`);
    const key = Object.hasOwn(attributes, "id") ? (attributes.id) : String(index);
    const earlier = seen.get(key);
    if (earlier !== undefined) throw new SendFieldError(`candidates[${index}].id`, `${JSON.stringify(key)} is also candidate ${earlier}'s: each answer needs its own key`);
    seen.set(key, index);
    const candidate: Candidate = { key, attributes };
    if (Object.hasOwn(attributes, "category")) candidate.category = attributes.category;
    return candidate;
  });
}
