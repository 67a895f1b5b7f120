import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { capCounterKey } from "../../src/core/caps/keys";
import { MemoryStore } from "../../src/core/store/memoryStore";
import { MemoryStateFile } from "../../src/core/store/memoryStateFile";
import { JsonBytes } from "../../src/core/jsonBytes";
import { renderTable, whole, ms } from "../report/markdown";
import { medianBy } from "../stats";
import { collector, stallCells, stallRuns, STALL_RUNS, watchLoop, type LoopStalls, type StallRuns } from "./loopWatch";

/** The memory store at scale: heap per recipient, and the loop's longest delay while it saves, idle and while sending. */
export interface ScaleRow {
  recipients: number;
  heapBytesPerRecipient: number;
  /** during a save with nothing else running */
  saveIdle: StallRuns;
  /** during a save while claims of 100 recipients run every ms */
  saveSending: StallRuns;
  /** over as long again with those claims and no save */
  sending: StallRuns;
  /** during a sweep of the million (all still live: each is looked at) */
  sweep: StallRuns;
  saveMs: number;
  /** how long making one part of the save's text takes (a pass over the parts, nothing written): the package's own share of a turn */
  partMs: { median: number; max: number; parts: number };
}

export const SCALE_RECIPIENTS = 1_000_000;

const CAP = [{ field: "day", windowMs: 86_400_000, max: 10 }];

function keyOf(i: number): string {
  return capCounterKey("fc", "default", `+1555${String(i).padStart(7, "0")}`);
}

async function fill(store: MemoryStore, recipients: number): Promise<void> {
  for (let i = 0; i < recipients; i += 5_000) {
    await store.claim(Array.from({ length: Math.min(5_000, recipients - i) }, (_, j) => ({ key: keyOf(i + j), member: `m${i + j}`, token: 1, counters: CAP })));
  }
}

/** Times the making of each part of the store's snapshot text, after a pass to warm it up. */
function partTimes(store: MemoryStore): ScaleRow["partMs"] {
  const out = new JsonBytes();
  for (const part of store.snapshotParts(out)) {
    void part;
    out.clear();
  }
  const times: number[] = [];
  let started = performance.now();
  for (const part of store.snapshotParts(out)) {
    void part;
    out.clear();
    const now = performance.now();
    times.push(now - started);
    started = now;
  }
  times.sort((a, b) => a - b);
  return { median: times[times.length >> 1], max: times[times.length - 1], parts: times.length };
}

/** How the loop stood while `run` ran. */
async function watched(run: () => Promise<void>): Promise<LoopStalls> {
  const stop = watchLoop();
  await run();
  return stop();
}

/** Claims of 100 recipients already held, every ms, until `stop` says so: a gate sending while the store saves. */
async function sending(recipients: number, store: MemoryStore, until: () => boolean): Promise<void> {
  let next = 0;
  while (!until()) {
    await store.claim(Array.from({ length: 100 }, () => {
      const i = next++ % recipients;
      return { key: keyOf(i), member: `m${i}`, token: 1, counters: CAP };
    }));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

export async function measureScale(progress: (text: string) => void, recipients = SCALE_RECIPIENTS): Promise<ScaleRow> {
  const gc = collector();
  const dir = mkdtempSync(join(tmpdir(), "sendgate-bench-scale-"));
  try {
    gc();
    const before = process.memoryUsage().heapUsed;
    const store = new MemoryStore();
    progress(`memory store: ${recipients} recipients × 1 cap`);
    await fill(store, recipients);
    gc();
    const heapBytesPerRecipient = (process.memoryUsage().heapUsed - before) / recipients;
    const partMs = partTimes(store);
    const file = new MemoryStateFile(store, join(dir, "memory.json"));
    const touch = (): Promise<unknown> => store.claim([{ key: keyOf(0), member: `m${Date.now()}`, token: 2, counters: CAP }]);
    const runs: { saveIdle: LoopStalls; saveSending: LoopStalls; sending: LoopStalls; sweep: LoopStalls; saveMs: number }[] = [];
    // the rows in turns, so that a slower minute of the box falls on each of them alike
    for (let run = 0; run < STALL_RUNS; run++) {
      progress(`memory store at scale: stalls, run ${run + 1} of ${STALL_RUNS}`);
      await touch();
      let saveMs = 0;
      const saveIdle = await watched(async () => {
        const started = performance.now();
        await file.save();
        saveMs = performance.now() - started;
      });
      await touch();
      let saved = false;
      const saveSending = await watched(async () => {
        await Promise.all([file.save().then(() => { saved = true; }), sending(recipients, store, () => saved)]);
      });
      const ends = performance.now() + saveMs;
      const sendingAlone = await watched(() => sending(recipients, store, () => performance.now() >= ends));
      const sweep = await watched(() => store.sweepInTurns());
      runs.push({ saveIdle, saveSending, sending: sendingAlone, sweep, saveMs });
    }
    await file.close();
    await store.close();
    return {
      recipients, heapBytesPerRecipient, partMs,
      saveIdle: stallRuns(runs.map((r) => r.saveIdle)), saveSending: stallRuns(runs.map((r) => r.saveSending)),
      sending: stallRuns(runs.map((r) => r.sending)), sweep: stallRuns(runs.map((r) => r.sweep)),
      saveMs: medianBy(runs, (r) => r.saveMs).median.saveMs,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function scaleTable(row: ScaleRow): string {
  const line = (what: string, runs: StallRuns): string[] => [what, ...stallCells(runs)];
  return [
    `${whole.format(row.recipients)} recipients × 1 cap, one send each: ${whole.format(row.heapBytesPerRecipient)} B of heap per recipient; a save in parts takes ${ms(row.saveMs)} ms; `
      + `each of its ${whole.format(row.partMs.parts)} parts of text takes ${ms(row.partMs.median)} ms (median), ${ms(row.partMs.max)} at most (timed apart, warm)`,
    "",
    renderTable(
      ["while", `longest event-loop stall ms, median of ${STALL_RUNS} (lowest–highest)`, "loop delay max ms", "longest GC pause ms"],
      [false, true, true, true],
      [line("a save, idle", row.saveIdle), line("a save, while sending", row.saveSending), line("sending, no save (floor)", row.sending), line("a sweep, idle", row.sweep)],
    ),
  ].join("\n");
}
