/**
 * Wall-clock time (Date's epoch ms) with the performance clock's sub-ms
 * resolution. The two clocks drift apart (the wall clock is slewed, the
 * performance clock is monotonic), by a ms or more over a process's life, so
 * a sub-ms time compared with a wall-clock instant (a msg's release_at) must
 * be read on the wall clock's scale: the offset is taken at the edge of a
 * Date ms tick, where Date.now() equals the true time to within a few µs.
 */
export function wallClock(): () => number {
  const start = Date.now();
  let edge = start;
  while (edge === start) edge = Date.now();
  const offset = edge - (performance.timeOrigin + performance.now());
  return () => performance.timeOrigin + performance.now() + offset;
}
