import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStore, SNAPSHOT_SLICE } from "../../src/core/stores/memoryStore";
import { MemoryStateFile } from "../../src/core/stores/memoryStateFile";
import { loadSnapshot } from "../../src/core/stores/memoryPersistence";
import type { ClaimOutcome, ClaimRequest } from "../../src/core/stores/admissionStore";

const CAPS = [
  { field: "hour", windowMs: 3_600_000, max: 1 },
  { field: "day", windowMs: 86_400_000, max: 3 },
];

const claimOf = (recipient: string, member: string): ClaimRequest => ({ key: `sf:{o|${recipient}}:c`, member, token: 1, counters: CAPS });

async function claimAll(store: MemoryStore, n: number, prefix: string): Promise<ClaimOutcome[]> {
  const answers: ClaimOutcome[] = [];
  for (let i = 0; i < n; i += 5_000) {
    const batch = Array.from({ length: Math.min(5_000, n - i) }, (_, j) => claimOf(`${prefix}${i + j}`, `m${i + j}`));
    for (const a of await store.claim(batch)) answers.push(a as ClaimOutcome);
  }
  return answers;
}

/** The store as the next process reads it back from the file. */
function reloaded(file: string): MemoryStore {
  const next = new MemoryStore();
  const saved = loadSnapshot(file);
  assert.ok(saved, "the file was written");
  next.restore(saved);
  return next;
}

describe("memory store state file", function () {
  this.timeout(60_000);
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "sendgate-statefile-"));
    file = join(dir, "state", "memory.json");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("writes in parts the same state one JSON.stringify of the snapshot gives", async () => {
    const store = new MemoryStore();
    await claimAll(store, 3 * SNAPSHOT_SLICE + 7, "r");
    await store.writeSuppressions([{ listKey: "sf:block", field: "f1", entry: "{}", indexKey: "sf:index", indexField: "i1" }]);
    const parts = [...store.snapshotParts()];
    assert.ok(parts.length > 3, `${parts.length} parts for ${3 * SNAPSHOT_SLICE + 7} counters`);
    await new MemoryStateFile(store, file).save();
    assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), JSON.parse(JSON.stringify(store.snapshot())));
  });

  it("lets the gates' calls run while it saves 100,000 recipients: a claim made during the save is answered before the save ends", async () => {
    const store = new MemoryStore();
    await claimAll(store, 100_000, "r");
    const stateFile = new MemoryStateFile(store, file);
    let saveEnded = false;
    const saving = stateFile.save().then(() => { saveEnded = true; });
    // a msg that reaches a gate while the file is being written: its claim is answered then, not after the save
    await new Promise((resolve) => setImmediate(resolve));
    const [during] = await store.claim([claimOf("late", "m-late")]);
    const answeredWhileSaving = !saveEnded;
    await saving;
    assert.equal((during as ClaimOutcome).allowed, true);
    assert.ok(answeredWhileSaving, "the claim waited for the whole save (one piece)");
    // what the claim changed may be in this file or not (its part may have been made before); the next save has it
    await stateFile.save();
    const next = reloaded(file);
    const again = await next.claim([claimOf("late", "m-late-2"), claimOf("r99999", "m-other")]);
    assert.deepEqual(again.map((a) => (a as ClaimOutcome).allowed), [false, false], "both recipients' hourly caps are full after the reload");
  });

  it("does not write a store that has not changed since its last save, nor one just read back from its file", async () => {
    const store = new MemoryStore();
    await claimAll(store, 10, "r");
    await new MemoryStateFile(store, file).save();
    const written = statSync(file).mtimeMs;
    const next = reloaded(file);
    const nextFile = new MemoryStateFile(next, file);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await nextFile.save();
    await nextFile.save();
    assert.equal(statSync(file).mtimeMs, written, "rewritten with nothing new");
    await next.claim([claimOf("new", "m-new")]);
    await nextFile.save();
    assert.ok(statSync(file).mtimeMs > written, "a change is written");
    assert.equal(existsSync(`${file}.tmp`), false);
  });

  it("runs a save asked for during another once after it, for every caller meanwhile: the change each followed is in the file when it resolves", async () => {
    const store = new MemoryStore();
    await claimAll(store, 20_000, "r");
    const stateFile = new MemoryStateFile(store, file);
    const first = stateFile.save();
    // an opt-out written while the first save runs: its save must not be the one that may have passed it
    await new Promise((resolve) => setImmediate(resolve));
    await store.writeSuppressions([{ listKey: "sf:block", field: "late-optout", entry: "{\"late\":true}", indexKey: "sf:index", indexField: "late" }]);
    const second = stateFile.save();
    const third = stateFile.save();
    assert.equal(second, third, "one save for the callers that asked during the first");
    await Promise.all([first, second]);
    const saved = loadSnapshot(file);
    const block = new Map(saved?.hashes ?? []).get("sf:block");
    assert.deepEqual(block, [["late-optout", "{\"late\":true}"]]);
  });
});
