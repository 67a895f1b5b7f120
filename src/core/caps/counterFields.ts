import { capCounterField } from "./keys";
import { PerValueTree, perValuesOf } from "./perValueTree";
import type { CapRule } from "../rules/rules";

interface RuleFields {
  fields: PerValueTree<string>;
  /** the match attributes and their values, read once rather than per send */
  match: ReadonlyArray<readonly [string, readonly string[]]>;
}

/**
 * A cap's counter field and match list are the same for every send with the
 * same per values, so they are made once per rule and values, not per send: a
 * check of 50 candidate ads over 3 caps names 150 fields, of which a handful
 * are new.
 */
export class CounterFieldCache {
  private readonly rules = new WeakMap<CapRule, RuleFields>();

  private of(rule: CapRule): RuleFields {
    let cached = this.rules.get(rule);
    if (!cached) {
      cached = { fields: new PerValueTree<string>(), match: Object.entries(rule.match) };
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
    const node = this.of(rule).fields.at(rule, attributes);
    return (node.value ??= capCounterField(rule.id, perValuesOf(rule, attributes)));
  }
}

export const counterFields = new CounterFieldCache();
