/**
 * Run by test/core/defer/journalFault.test.ts under `ulimit -f` (a file size
 * limit: past it every write fails with EFBIG, as on a full disk). Holds msgs
 * in a memory defer store until the journal cannot be written, goes on, then
 * dies without closing; prints what each call answered, as JSON.
 * argv: the journal file.
 */
import { JOURNAL_RETRY_MS, MemoryDeferStore } from "../../src/core/hold/memoryHeldQueues";
import type { DeferInput } from "../../src/core/hold/heldQueue";

const file = process.argv[2];
const BURST = 5_000;
const now = Date.now();
const warnings: string[] = [];
const answers: { call: string; ok: boolean; detail: unknown }[] = [];

function held(id: string, dueAt: number, payload: string): DeferInput {
  return { id, gate: "gate-1", dueAt, deferrals: 1, firstDeferredAt: now, msg: { payload } };
}

async function answer(call: string, work: () => Promise<unknown>): Promise<unknown> {
  try {
    const detail = await work();
    answers.push({ call, ok: true, detail });
    return detail;
  } catch (err) {
    answers.push({ call, ok: false, detail: (err as Error).message });
    return undefined;
  }
}

async function main(): Promise<void> {
  const store = new MemoryDeferStore({ file, warn: (t) => warnings.push(t) });
  const queue = store.queue("gate-1");
  await answer("hold a", () => queue.defer(held("a", now + 60_000, "small")));
  await answer("hold b", () => queue.defer(held("b", now + 60_000, "small")));
  // its line alone is past the limit: the write fails part way
  await answer("hold big", () => queue.defer(held("big", now - 1, "x".repeat(16_384))));
  await answer("hold d", () => queue.defer(held("d", now + 60_000, "small")));
  const taken = (await answer("take", () => queue.takeDue(10, 30_000).then((msgs) => msgs.map((m) => m.id)))) as string[] | undefined;
  await answer("ack", () => queue.ack(taken ?? []));
  // a burst held, handed out and acked while the journal cannot be written (a split node's thousands in one tick)
  const burst = Array.from({ length: BURST }, (_, i) => ({ entry: held(`burst-${i}`, now - 1, "small") }));
  await answer("hold burst", () => queue.deferMany(burst).then((results) => results.filter((r) => !(r instanceof Error)).length));
  const burstTaken = (await answer("take burst", () => queue.takeDue(2 * BURST, 30_000).then((msgs) => msgs.map((m) => m.id)))) as string[] | undefined;
  await answer("ack burst", () => queue.ack(burstTaken ?? []));
  const faultWarnings = warnings.length;
  // what is held now fits: the next whole write, JOURNAL_RETRY_MS on, succeeds
  await new Promise((resolve) => setTimeout(resolve, JOURNAL_RETRY_MS + 500));
  await answer("hold e", () => queue.defer(held("e", now + 60_000, "small")));
  process.stdout.write(JSON.stringify({ answers, warnings, faultWarnings, size: await queue.size() }));
  // dies here, no close: what the next start finds is what the journal has
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(String((err as Error).stack));
  process.exit(1);
});
