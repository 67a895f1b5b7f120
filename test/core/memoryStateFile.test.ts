import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { MemoryStore, SNAPSHOT_SLICE, type MemorySnapshot } from "../../src/core/store/memoryStore";
import { MemoryStateFile } from "../../src/core/store/memoryStateFile";
import { JsonBytes } from "../../src/core/jsonBytes";
import { loadSnapshot } from "../../src/core/store/memoryPersistence";
import type { ClaimOutcome, ClaimRequest } from "../../src/core/store/admissionStore";

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

  it("writes in parts what it holds: every kind of entry, across several parts, read back as it was given", async () => {
    const later = Date.now() + 3_600_000;
    // a state of every kind, made here (not by the store's own snapshot): restored, then saved in parts, it must come back the same
    const given: MemorySnapshot = {
      version: 2,
      counters: Array.from({ length: 2 * SNAPSHOT_SLICE + 5 }, (_, i) => [`sf:{o|r${i}}:c`, { expiresAt: later, fields: [["hour", [[Date.now(), i, 1]]]] }]),
      hashes: [["sf:block", [["f1", "{\"a\":1}"], ["f2", "{\"b\":2}"]]], ["sf:index", [["i1", "{}"]]]],
      marks: [["sf:mark", { member: "m1", expiresAt: later }]],
      quotas: [["sf:total", { expiresAt: null, fields: [["spent", "3"]] }]],
      ceilings: [["sf:ceiling", { tat: Date.now() * 1000 + 5_000_000, expiresAt: later }]],
      givenBacks: [["sf:total", [["spend-1", Date.now()]]]],
    };
    const store = new MemoryStore();
    store.restore(structuredClone(given));
    const parts = [...store.snapshotParts(new JsonBytes())];
    assert.ok(parts.length >= 3, `${parts.length} parts for ${given.counters.length} counters`);
    // a store read back counts as saved: one change makes it write
    await store.claim([claimOf("changed", "m-changed")]);
    await new MemoryStateFile(store, file).save();
    const saved = loadSnapshot(file) as MemorySnapshot;
    assert.deepEqual({ ...saved, counters: saved.counters.filter(([key]) => !key.includes("changed")) }, given);
  });

  it("lets the gates' calls run while it saves 100,000 recipients: the loop turns between its parts", async () => {
    const store = new MemoryStore();
    await claimAll(store, 100_000, "r");
    const stateFile = new MemoryStateFile(store, file);
    let saveEnded = false;
    let turns = 0;
    // the turn of the loop each part of the text was made in
    const madeIn: number[] = [];
    const parts = store.snapshotParts.bind(store);
    store.snapshotParts = function* partsSeen(out: JsonBytes, slice?: number) {
      for (const part of parts(out, slice)) {
        madeIn.push(turns);
        yield part;
      }
    };
    const saving = stateFile.save().then(() => { saveEnded = true; });
    // a gate's call at every turn of the loop the save leaves free: one in one piece would get a handful (its file calls)
    const answered: boolean[] = [];
    while (!saveEnded) {
      await new Promise((resolve) => setImmediate(resolve));
      turns++;
      const [answer] = await store.claim([claimOf(`during${turns}`, `m${turns}`)]);
      answered.push((answer as ClaimOutcome).allowed);
    }
    await saving;
    assert.ok(madeIn.length >= 100_000 / SNAPSHOT_SLICE, `${madeIn.length} parts`);
    // each part in a turn of its own (a few share one around a write of the file)
    assert.ok(new Set(madeIn).size >= 0.9 * madeIn.length, `${madeIn.length} parts made in ${new Set(madeIn).size} turns of the loop`);
    assert.ok(answered.every(Boolean));
    // what those claims changed may be in this file or not (their part may have been made before); the next save has it
    await stateFile.save();
    const next = reloaded(file);
    const again = await next.claim([claimOf(`during${turns}`, "m-again"), claimOf("r99999", "m-other")]);
    assert.deepEqual(again.map((a) => (a as ClaimOutcome).allowed), [false, false], "both recipients' hourly caps are full after the reload");
  });

  it("removes the temporary files of a process that died mid-save, and none of its own process", async () => {
    const store = new MemoryStore();
    await claimAll(store, 10, "r");
    await new MemoryStateFile(store, file).save();
    const dead = [`${file}.999999999-3.tmp`, `${file}.tmp`];
    const own = `${file}.${process.pid}-7.tmp`;
    for (const name of [...dead, own]) writeFileSync(name, "{");
    new MemoryStateFile(store, file);
    assert.deepEqual(readdirSync(dirname(file)).sort(), [basename(file), basename(own)].sort());
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
    assert.deepEqual(readdirSync(dirname(file)).filter((f) => f.endsWith(".tmp")), []);
  });

  it("runs a save asked for during another once after it, for every caller meanwhile: a change the running save had passed is in the file when it resolves", async () => {
    const store = new MemoryStore();
    await claimAll(store, 20_000, "r");
    const stateFile = new MemoryStateFile(store, file);
    const first = stateFile.save();
    // once the first save has written text to its temporary file, it has made the part with recipient r0
    const dir = dirname(file);
    const started = (): boolean => existsSync(dir) && readdirSync(dir).some((f) => f.endsWith(".tmp") && statSync(join(dir, f)).size > 0);
    while (!started()) await new Promise((resolve) => setImmediate(resolve));
    await store.record([{ key: "sf:{o|r0}:c", member: "recorded-late", counters: CAPS }]);
    const second = stateFile.save();
    const third = stateFile.save();
    assert.equal(second, third, "one save for the callers that asked during the first");
    await first;
    const passed = new Map(loadSnapshot(file)?.counters ?? []).get("sf:{o|r0}:c");
    assert.equal(passed?.fields.find(([field]) => field === "day")?.[1].length, 1, "the first save had made r0's part before the change");
    await second;
    const saved = new Map(loadSnapshot(file)?.counters ?? []).get("sf:{o|r0}:c");
    assert.equal(saved?.fields.find(([field]) => field === "day")?.[1].length, 2, "r0's late entry is in the file once the second save resolves");
  });

  it("closes after every save asked for, then saves what is left and takes no more: an opt-out written as it closes is in the file", async () => {
    const store = new MemoryStore();
    await claimAll(store, 20_000, "r");
    const stateFile = new MemoryStateFile(store, file);
    const first = stateFile.save();
    await new Promise((resolve) => setImmediate(resolve));
    const asked = stateFile.save();
    const closed = stateFile.close();
    await store.writeSuppressions([{ listKey: "sf:block", field: "as-it-closes", entry: "{}", indexKey: "sf:index", indexField: "c" }]);
    await closed;
    await Promise.all([first, asked]);
    assert.deepEqual(new Map(loadSnapshot(file)?.hashes ?? []).get("sf:block"), [["as-it-closes", "{}"]]);
    await assert.rejects(stateFile.save(), /closed/);
    assert.deepEqual(readdirSync(dirname(file)).filter((f) => f.endsWith(".tmp")), [], "no temporary file left");
  });
});
