/**
 * Stand-in instances of the classes a gate makes per msg or per store call,
 * kept for the life of the process.
 *
 * V8 optimizes a gate's path against the hidden classes ("maps") of those
 * objects, and an instance reaches its map through transitions V8 holds
 * weakly. When a gate has been idle through full garbage collections with
 * none of them alive (the quiet between two campaigns), the maps are
 * collected and every function optimized against them is thrown away: the
 * next burst runs unoptimized, and pays for compiling it all again, on every
 * core. One living instance of each class keeps its map. A stand-in is made
 * by the class's own constructor, so it takes the transitions a real one
 * takes; a class whose instances gain fields after their constructor would
 * need them set on its stand-in too (test/core/keptShapes.test.ts compares
 * each stand-in's map with real instances').
 */
const standIns: object[] = [];

/** Keeps `standIn` alive for the life of the process; answers it. */
export function keepShape<T extends object>(standIn: T): T {
  standIns.push(standIn);
  return standIn;
}

/** the stand-ins kept so far (for tests) */
export function keptStandIns(): readonly object[] {
  return standIns;
}
