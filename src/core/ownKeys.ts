/**
 * User data names keys (cap ids, attribute names, orgs…): a plain `{}` would
 * answer `constructor` or `__proto__` with what every object inherits. These
 * helpers only ever see a record's own properties.
 */

/** An empty record with no prototype: no name finds an inherited member, and `__proto__` is an ordinary key. */
export function emptyRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** The one prototype of namesRecord: empty, frozen, and itself without a prototype. */
const NOTHING_INHERITED: object = Object.freeze(Object.create(null) as object);

/**
 * A record for names that recur from msg to msg (attribute names): nothing is
 * inherited, as with emptyRecord, since its prototype is an empty object with
 * no prototype. But V8 keeps it in fast mode, with one shape shared by every
 * record of the same names, where a null-prototype object is a hash table of
 * its own: ~600 bytes for a candidate ad's 4 attributes, 50 per check.
 */
export function namesRecord<T>(): Record<string, T> {
  return Object.create(NOTHING_INHERITED) as Record<string, T>;
}

/** Whether a record inherits nothing: no prototype, or namesRecord's empty one. */
export function inheritsNothing(record: object): boolean {
  const proto = Object.getPrototypeOf(record) as object | null;
  return proto === null || proto === NOTHING_INHERITED;
}

/** The record's own value under `key`, or undefined; never an inherited member. */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
