/**
 * Drops `map`'s entries that `expired` finds expired, `slice` of them at a
 * time: it yields between slices, and the clock is read again after each, so
 * a caller can give the event loop a turn there. A Map's iterator goes on
 * past entries added or removed meanwhile.
 */
export function* dropExpired<V>(map: Map<string, V>, expired: (value: V, now: number) => boolean, clock: () => number, slice: number): Generator<void, void, undefined> {
  const keys = map.keys();
  const values = map.values();
  while (!dropSlice(map, keys, values, expired, clock(), slice)) yield;
}

/**
 * Looks at the next `slice` entries; true when none are left. It walks a key
 * and a value iterator side by side rather than entries(): two iterators of
 * one Map stand at the same entry after as many steps, whatever was added or
 * deleted meanwhile (each keeps its place in the Map's one list), and neither
 * makes anything per step once V8 has optimized this loop, where entries()
 * makes a [key, value] array per entry: garbage that a pass over a large
 * store would have the young generation collect again and again.
 */
function dropSlice<V>(map: Map<string, V>, keys: IterableIterator<string>, values: IterableIterator<V>, expired: (value: V, now: number) => boolean, now: number, slice: number): boolean {
  for (let seen = 0; seen < slice; seen++) {
    const key = keys.next();
    if (key.done === true) return true;
    if (expired(values.next().value as V, now)) map.delete(key.value);
  }
  return false;
}

/** Runs `parts` to the end at once. */
export function drain(parts: Iterable<void>): void {
  const iterator = parts[Symbol.iterator]();
  while (iterator.next().done !== true) {
    // each part did its work as it was reached
  }
}
