import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStore } from "../../src/core/store/memoryStore";
import { MemoryStateFile } from "../../src/core/store/memoryStateFile";
import { JsonBytes } from "../../src/core/jsonBytes";
import { MemoryDeferStore } from "../../src/core/hold/memoryHeldQueues";
import { renderTable, whole, ms } from "../report/markdown";
import { watchLoop, type LoopStalls } from "./loopWatch";

/** One way of saving a memory store of `recipients` recipients: how long it took, and the longest the event loop stood still meanwhile. */
export interface StateFileRow {
  how: string;
  recipients: number;
  saveMs: number;
  stalls: LoopStalls;
  fileMB: number;
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
async function watched(how: string, recipients: number, file: string, save: () => Promise<void>): Promise<StateFileRow> {
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
async function journalRows(dir: string, held: number): Promise<StateFileRow[]> {
  const file = join(dir, "memory-defer.jsonl");
  const now = Date.now();
  const batch = 5_000;
  const hold = (store: MemoryDeferStore, from: number, n: number): Promise<unknown> => store.queue("bench-gate").deferMany(Array.from({ length: n }, (_, j) => ({
    entry: { id: `h${from + j}`, gate: "bench-gate", dueAt: now + 3_600_000, deferrals: 1, firstDeferredAt: now, msg: { recipient: `+1555${from + j}`, channel: "sms", payload: "x".repeat(120) } },
  })));
  const fill = async (store: MemoryDeferStore, n: number): Promise<void> => {
    for (let i = 0; i < n; i += batch) await hold(store, i, Math.min(batch, n - i));
  };
  const rows: StateFileRow[] = [];
  const whole = new MemoryDeferStore({ file, warn: () => undefined });
  await fill(whole, held);
  const bytesPerMsg = statSync(file).size / held;
  rows.push(await watched("defer journal, one piece (as on close)", held, file, async () => whole.close()));
  // a threshold the last batch crosses: its hold begins the compaction, and the row lasts until the file takes over
  const parts = new MemoryDeferStore({ file, warn: () => undefined, compactAfterBytes: Math.floor((held - batch / 2) * bytesPerMsg) });
  await fill(parts, held - batch);
  // the hold that crosses it is a gate's own work, done before the watch begins; the compaction it begins starts on the next turn
  await hold(parts, held - batch, batch);
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
  const rows: StateFileRow[] = [];
  try {
    for (const recipients of STATE_FILE_RECIPIENTS) {
      progress(`state file: ${recipients} recipients`);
      const store = await filled(recipients);
      const file = join(dir, "memory.json");
      // the same text, made whole and written in one go
      rows.push(await watched("one piece (all parts, then writeFileSync)", recipients, file, async () => {
        const out = new JsonBytes();
        for (const part of store.snapshotParts(out, Number.POSITIVE_INFINITY)) void part;
        writeFileSync(file, out.bytes());
      }));
      rows.push(await watched("in parts (MemoryStateFile)", recipients, file, async () => {
        // a store changed since its file was made: one fresh change makes it save
        await store.claim([{ key: "bench:{default|fresh}:c", member: `m${Date.now()}`, token: 1, counters: CAPS }]);
        await new MemoryStateFile(store, file).save();
      }));
    }
    for (const held of JOURNAL_HELD) {
      progress(`defer journal: ${held} held msgs`);
      rows.push(...await journalRows(dir, held));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

export function stateFileTable(rows: readonly StateFileRow[]): string {
  return renderTable(
    ["memory store save", "recipients / held msgs", "file MB", "save ms", "longest event-loop stall ms", "loop delay max ms", "longest GC pause ms"],
    [false, true, true, true, true, true, true],
    rows.map((r) => [r.how, whole.format(r.recipients), r.fileMB.toFixed(1), ms(r.saveMs), ms(r.stalls.longestGapMs), ms(r.stalls.delayMaxMs), ms(r.stalls.longestGcMs)]),
  );
}
