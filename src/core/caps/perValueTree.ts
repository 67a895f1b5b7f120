import { ownValue } from "../ownKeys";
import type { CapRule } from "../rules/rules";

/** One node of a PerValueTree: what is made for the per values that end here, and the nodes below by the next value. */
export class PerValueNode<T> {
  value: T | undefined;
  readonly next = new Map<string, PerValueNode<T>>();
}

/**
 * What is made once per rule and per values (a counter's field, a total's
 * key), found value by value as the send's attributes give them: no string or
 * array is made per send, the lookup is the hot path. Starts again past `max`
 * nodes, since per values such as ad ids are unbounded.
 */
export class PerValueTree<T> {
  private root = new PerValueNode<T>();
  private size = 0;

  constructor(private readonly max = 10_000) {}

  /** The node of the rule's per values in `attributes` (each present: appliesTo checked); its value is the caller's to make once. */
  at(rule: CapRule, attributes: Readonly<Record<string, string>>): PerValueNode<T> {
    if (this.size >= this.max) {
      this.root = new PerValueNode<T>();
      this.size = 0;
    }
    let node = this.root;
    for (let i = 0; i < rule.per.length; i++) {
      const value = ownValue(attributes, rule.per[i]) as string;
      let below = node.next.get(value);
      if (!below) {
        below = new PerValueNode<T>();
        node.next.set(value, below);
        this.size += 1;
      }
      node = below;
    }
    return node;
  }
}

/** The rule's per values as the send's attributes give them (each present: appliesTo checked). */
export function perValuesOf(rule: CapRule, attributes: Readonly<Record<string, string>>): string[] {
  return rule.per.map((a) => ownValue(attributes, a) as string);
}
