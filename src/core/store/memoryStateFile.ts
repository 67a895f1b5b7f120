import { readdirSync, rmSync } from "node:fs";
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import { JsonBytes } from "../jsonBytes";
import type { MemoryStore } from "./memoryStore";

/** bytes gathered before one write to the file */
const WRITE_BYTES = 1 << 18;

/**
 * Where a memory store's state is saved: its snapshot, written a part at a
 * time (the event loop runs the gates between parts) through a temporary
 * file and a rename, so a crash mid-save leaves the last whole file. One save
 * runs at a time; one asked for meanwhile runs once after it, for every
 * caller that asked. A store that has not changed since the last save is not
 * written again.
 */
export class MemoryStateFile {
  /** the store's change count the file holds: none at first (a store just read back from its file, or a new one, has none) */
  private saved = 0;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private closed = false;
  /** each write has a temporary file of its own: the next deployment's cap-config may write beside a late one of this */
  private writes = 0;

  constructor(private readonly store: MemoryStore, private readonly file: string) {
    this.dropDeadWrites();
  }

  /** Temporary files of a process that died mid-save (another pid: this process's own writes end with a rename or a removal). */
  private dropDeadWrites(): void {
    const dir = dirname(this.file);
    const prefix = `${basename(this.file)}.`;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.startsWith(prefix) || !name.endsWith(".tmp")) continue;
      // <file>.<pid>-<write>.tmp, or <file>.tmp of the versions that saved in one piece
      const pid = Number(name.slice(prefix.length).split("-")[0]);
      const dead = name === `${prefix}tmp` || (Number.isInteger(pid) && pid !== process.pid);
      if (dead) rmSync(join(dir, name), { force: true });
    }
  }

  /** Resolves once a save begun after this call has landed (at once when nothing changed); rejects when it could not be written. */
  save(): Promise<void> {
    if (this.closed) return Promise.reject(new Error("the memory store's state file is closed"));
    return this.saveNext();
  }

  /**
   * The last save: waits for every save asked for so far (one queued behind
   * the running one too), then saves what is left, and takes no more. The next
   * deployment reads the file once this resolves.
   */
  async close(): Promise<void> {
    this.closed = true;
    while (this.running || this.queued) await (this.queued ?? this.running)?.catch(() => undefined);
    await this.saveNext();
  }

  private saveNext(): Promise<void> {
    if (!this.running) {
      const running = this.write().finally(() => {
        if (this.running === running) this.running = undefined;
      });
      this.running = running;
      return running;
    }
    // the save under way may have made its parts before the change this call follows: one more after it
    this.queued ??= this.running.catch(() => undefined).then(() => {
      this.queued = undefined;
      return this.saveNext();
    });
    return this.queued;
  }

  private async write(): Promise<void> {
    const changes = this.store.changes;
    if (changes === this.saved) return;
    const temporary = `${this.file}.${process.pid}-${++this.writes}.tmp`;
    await mkdir(dirname(this.file), { recursive: true });
    const handle = await open(temporary, "w");
    let written = false;
    try {
      // room for the part that crosses WRITE_BYTES (a part is at most about a quarter of it)
      const out = new JsonBytes(WRITE_BYTES + WRITE_BYTES / 4);
      for (const step of this.store.snapshotParts(out)) {
        void step;
        if (out.length >= WRITE_BYTES) {
          await handle.write(out.bytes());
          out.clear();
        }
        // a turn after every part, a write's too: a write's answer alone would let the next part follow in the same turn
        await nextTurn();
      }
      await handle.write(out.bytes());
      written = true;
    } finally {
      await handle.close();
      if (!written) await rm(temporary, { force: true });
    }
    try {
      await rename(temporary, this.file);
    } catch (err) {
      await rm(temporary, { force: true });
      throw err;
    }
    this.saved = changes;
  }
}
