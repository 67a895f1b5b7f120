/**
 * User data names keys (cap ids, attribute names, orgs…): a plain `{}` would
 * answer `constructor` or `__proto__` with what every object inherits. These
 * helpers only ever see a record's own properties.
 */

/** An empty record with no prototype: no name finds an inherited member, and `__proto__` is an ordinary key. */
export function emptyRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** The record's own value under `key`, or undefined; never an inherited member. */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
