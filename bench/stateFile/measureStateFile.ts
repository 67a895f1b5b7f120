import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStore } from "../../src/core/store/memoryStore";
import { MemoryStateFile } from "../../src/core/store/memoryStateFile";
import { JsonBytes } from "../../src/core/jsonBytes";
import { MemoryDeferStore } from "../../src/core/hold/memoryHeldQueues";
import { renderTable, whole, ms } from "../report/markdown";
import { collector, stallCells, stallRuns, STALL_RUNS, watchLoop, type Collector, type LoopStalls, type StallRuns } from "./loopWatch";
import { medianBy } from "../stats";

/** One run of one way of saving a memory store of `recipients` recipients: how long it took, and the longest the event loop stood still meanwhile. */
interface StateFileRun {
  how: string;
  recipients: number;
  saveMs: number;
  stalls: LoopStalls;
  fileMB: number;
}

/** The runs of one way of saving: the median run's time and file, and the stalls of every run. */
export interface StateFileRow {
  how: string;
  recipients: number;
  saveMs: number;
  stalls: StallRuns;
  fileMB: number;
}

/** The runs of each way, in the order the first run met them. */
function rowsOf(runs: readonly StateFileRun[]): StateFileRow[] {
  const ways = new Map<string, StateFileRun[]>();
  for (const run of runs) {
    const way = `${run.how}\u0000${run.recipients}`;
    const list = ways.get(way);
    if (list) list.push(run);
    else ways.set(way, [run]);
  }
  return [...ways.values()].map((list) => {
    const { median } = medianBy(list, (r) => r.stalls.longestGapMs);
    return { how: median.how, recipients: median.recipients, saveMs: median.saveMs, fileMB: median.fileMB, stalls: stallRuns(list.map((r) => r.stalls)) };
  });
}

const CAPS = [
  { field: "hour", windowMs: 3_600_000, max: 5 },
  { field: "day", windowMs: 86_400_000, max: 10 },
  { field: "week", windowMs: 604_800_000, max: 20 },
];
export const STATE_FILE_RECIPIENTS: readonly number[] = [10_000, 100_000];

async function filled(recipients: number): Promise<MemoryStore> {
  const store = new MemoryStore();
  for (let i = 0; i < recipients; i += 5_000) {
    await store.claim(Array.from({ length: Math.min(5_000, recipients - i) }, (_, j) => ({ key: `bench:{default|r${i + j}}:c`, member: `m${i + j}`, token: 1, counters: CAPS })));
  }
  return store;
}

/** Runs `save` with a 1 ms ticker beside it: the longest gap between its ticks is the longest the loop stood still. */
async function watched(how: string, recipients: number, file: string, save: () => Promise<void>): Promise<StateFileRun> {
  const stop = watchLoop();
  const started = performance.now();
  await save();
  const saveMs = performance.now() - started;
  // the gap a save in one piece made ends with the next tick
  await new Promise((resolve) => setTimeout(resolve, 5));
  const stalls = stop();
  const bytes = statSync(file).size;
  rmSync(file, { force: true });
  return { how, recipients, saveMs, stalls, fileMB: bytes / 1e6 };
}

/** held msgs of a defer journal compacted in the journal rows */
export const JOURNAL_HELD: readonly number[] = [100_000];

/**
 * The memory defer queue's journal holding `held` msgs (a small one each):
 * compacted in one piece (what close does, and what a running queue did
 * once 32 MB had been appended) and in parts while the queue runs.
 */
async function journalRuns(dir: string, held: number, collect: Collector): Promise<StateFileRun[]> {
  const file = join(dir, "memory-defer.jsonl");
  const now = Date.now();
  const batch = 5_000;
  const hold = (store: MemoryDeferStore, from: number, n: number): Promise<unknown> => store.queue("bench-gate").deferMany(Array.from({ length: n }, (_, j) => ({
    entry: { id: `h${from + j}`, gate: "bench-gate", dueAt: now + 3_600_000, deferrals: 1, firstDeferredAt: now, msg: { recipient: `+1555${from + j}`, channel: "sms", payload: "x".repeat(120) } },
  })));
  const fill = async (store: MemoryDeferStore, n: number): Promise<void> => {
    for (let i = 0; i < n; i += batch) await hold(store, i, Math.min(batch, n - i));
  };
  const rows: StateFileRun[] = [];
  let whole: MemoryDeferStore | undefined = new MemoryDeferStore({ file, warn: () => undefined });
  await fill(whole, held);
  const fileBytes = statSync(file).size;
  rows.push(await watched("defer journal, one piece (as on close)", held, file, async () => whole?.close()));
  // its msgs are not the next row's heap: a fuller heap makes every collection of the young generation longer
  whole = undefined;
  collect();
  // a threshold the last msg's line crosses (the header is shorter than the margin, each line longer): its hold begins the compaction
  const parts = new MemoryDeferStore({ file, warn: () => undefined, compactAfterBytes: fileBytes - 100 });
  await fill(parts, held - 1);
  // what the fill's 5,000-msg holds owe the collector (a young generation of held msgs, an old one grown by 40 MB) is paid
  // before the watch, as msgs held long before have paid it, and its sweep is let finish: the row is the compaction's
  collect();
  await new Promise((resolve) => setTimeout(resolve, 200));
  // the hold that crosses it is a gate's own work, done before the watch begins; the compaction it begins starts on the next turn
  await hold(parts, held - 1, 1);
  rows.push(await watched("defer journal, in parts (while running)", held, file, async () => {
    const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1));
    // it begins on the next turn, and ends when its file takes the journal's place
    while (!existsSync(`${file}.parts.tmp`)) await tick();
    while (existsSync(`${file}.parts.tmp`)) await tick();
  }));
  parts.close();
  rmSync(file, { force: true });
  return rows;
}

/**
 * The memory store's state file: the save in parts (MemoryStateFile, what a
 * cap-config runs every 5 s) beside the one piece it replaced (the whole
 * text made at once, then writeFileSync), each on a store of the same size.
 */
export async function measureStateFile(progress: (text: string) => void): Promise<StateFileRow[]> {
  const dir = mkdtempSync(join(tmpdir(), "sendgate-bench-state-"));
  const runs: StateFileRun[] = [];
  const collect = collector();
  try {
    for (const recipients of STATE_FILE_RECIPIENTS) {
      const store = await filled(recipients);
      const file = join(dir, "memory.json");
      for (let run = 0; run < STALL_RUNS; run++) {
        progress(`state file: ${recipients} recipients, run ${run + 1} of ${STALL_RUNS}`);
        // the same text, made whole and written in one go
        runs.push(await watched("one piece (all parts, then writeFileSync)", recipients, file, async () => {
          const out = new JsonBytes();
          for (const part of store.snapshotParts(out, Number.POSITIVE_INFINITY)) void part;
          writeFileSync(file, out.bytes());
        }));
        runs.push(await watched("in parts (MemoryStateFile)", recipients, file, async () => {
          // a store changed since its file was made: one fresh change makes it save
          await store.claim([{ key: "bench:{default|fresh}:c", member: `m${Date.now()}`, token: 1, counters: CAPS }]);
          await new MemoryStateFile(store, file).save();
        }));
      }
      await store.close();
    }
    for (const held of JOURNAL_HELD) {
      for (let run = 0; run < STALL_RUNS; run++) {
        progress(`defer journal: ${held} held msgs, run ${run + 1} of ${STALL_RUNS}`);
        runs.push(...await journalRuns(dir, held, collect));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rowsOf(runs);
}

export function stateFileTable(rows: readonly StateFileRow[]): string {
  return renderTable(
    ["memory store save", "recipients / held msgs", "file MB", "save ms", `longest event-loop stall ms, median of ${STALL_RUNS} (lowest–highest)`, "loop delay max ms", "longest GC pause ms"],
    [false, true, true, true, true, true, true],
    rows.map((r) => [r.how, whole.format(r.recipients), r.fileMB.toFixed(1), ms(r.saveMs), ...stallCells(r.stalls)]),
  );
}
