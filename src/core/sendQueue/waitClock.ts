import { performance } from "node:perf_hooks";

/**
 * How long this process's event loop has waited for I/O since it started
 * (ms, its idle time): a clock that stands still while the process works.
 *
 * A store call's silence is counted on it (roundTrip). While this process is
 * busy (a burst: every answer runs a msg on through its gates) it holds one
 * of the box's cores, the store's servers get less of the others, and their
 * answers come late for it; while it waits, the servers have the box, and a
 * server that owes an answer and still says nothing is not answering.
 */
export function waitedMs(): number {
  return performance.eventLoopUtilization().idle;
}
