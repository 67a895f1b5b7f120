/**
 * Drops `map`'s entries that `expired` finds expired, `slice` of them at a
 * time: it yields between slices, and the clock is read again after each, so
 * a caller can give the event loop a turn there. A Map's iterator goes on
 * past entries added or removed meanwhile.
 */
export function* dropExpired<V>(map: Map<string, V>, expired: (value: V, now: number) => boolean, clock: () => number, slice: number): Generator<void, void, undefined> {
  let now = clock();
  let seen = 0;
  for (const [key, value] of map) {
    if (expired(value, now)) map.delete(key);
    if (++seen % slice === 0) {
      yield;
      now = clock();
    }
  }
}

/** Runs `parts` to the end at once. */
export function drain(parts: Iterable<void>): void {
  const iterator = parts[Symbol.iterator]();
  while (iterator.next().done !== true) {
    // each part did its work as it was reached
  }
}
