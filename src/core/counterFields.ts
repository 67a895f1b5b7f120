import { capCounterField } from "./keys";
import { ownValue } from "./ownKeys";
import type { CapRule } from "./rules";

/** Past this many fields a rule's cache starts again (per values such as ad ids are unbounded). */
const MAX_CACHED = 10_000;

/** One level of a rule's cache: the field when the per values end here, and the levels below by the next value. */
class Level {
  field: string | undefined;
  readonly next = new Map<string, Level>();
}

interface RuleFields {
  root: Level;
  size: number;
  /** the match attributes and their values, read once rather than per send */
  match: ReadonlyArray<readonly [string, readonly string[]]>;
}

/**
 * A cap's counter field and match list are the same for every send with the
 * same per values, so they are made once per rule and values, not per send: a
 * check of 50 candidate ads over 3 caps names 150 fields, of which a handful
 * are new. Looked up value by value, so no string is built for the lookup.
 */
export class CounterFieldCache {
  private readonly rules = new WeakMap<CapRule, RuleFields>();

  private of(rule: CapRule): RuleFields {
    let cached = this.rules.get(rule);
    if (!cached || cached.size >= MAX_CACHED) {
      cached = { root: new Level(), size: 0, match: cached?.match ?? Object.entries(rule.match) };
      this.rules.set(rule, cached);
    }
    return cached;
  }

  /** The rule's match attributes with their allowed values. */
  match(rule: CapRule): ReadonlyArray<readonly [string, readonly string[]]> {
    return this.of(rule).match;
  }

  /** `capCounterField(rule.id, per values)`, the values read from `attributes` (each present: appliesTo checked). */
  field(rule: CapRule, attributes: Readonly<Record<string, string>>): string {
    const cached = this.of(rule);
    let level = cached.root;
    for (let i = 0; i < rule.per.length; i++) {
      const value = ownValue(attributes, rule.per[i] as string) as string;
      let below = level.next.get(value);
      if (!below) {
        below = new Level();
        level.next.set(value, below);
      }
      level = below;
    }
    if (level.field === undefined) {
      level.field = capCounterField(rule.id, rule.per.map((a) => ownValue(attributes, a) as string));
      cached.size += 1;
    }
    return level.field;
  }
}

export const counterFields = new CounterFieldCache();
