import { close, closeSync, existsSync, fdatasync, mkdirSync, openSync, readFileSync, renameSync, rmSync, write, writeFileSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { JsonBytes } from "../jsonBytes";

const HEADER = { sendgate: "defer-journal", v: 2 };

/** A journal's rewrite under way (DeferJournal.beginRewrite). */
export interface JournalRewrite {
  /** bytes of lines written so far */
  readonly bytes: number;
  /** adds a line to the part being gathered */
  add(line: object): void;
  /** bytes of the part being gathered */
  readonly pending: number;
  /** writes the part gathered on the thread pool; no line is added until it is written */
  flush(): Promise<void>;
  /**
   * puts what was written so far on disk, on the thread pool: the rename in
   * `finish` then has little left to place (ext4 places a file's pending
   * blocks in the rename that replaces another file, on the calling thread)
   */
  settle(): Promise<void>;
  /** writes these last lines, then puts the file in place of the journal, which is appended to from now on */
  finish(lines: readonly object[]): void;
  /** drops the temporary file; the journal stays as it is */
  abandon(): void;
}

/** a scratch of lines this large or smaller is kept for the next call; a larger one (a rewrite in one piece) is let go */
const KEPT_SCRATCH_BYTES = 1 << 20;
/** the bytes of the last lines written: every write is synchronous, so one scratch serves every journal of the process */
let scratch: JsonBytes | undefined;

/**
 * `use` given lines as the journal keeps them (one JSON object per line), as
 * bytes valid during the call, written into one reused buffer: every hold,
 * merge and release appends its lines.
 */
function withLineBytes<T>(lines: readonly object[], use: (bytes: Buffer) => T): T {
  const out = scratch ?? new JsonBytes(64 * 1024);
  scratch = undefined;
  linesInto(out, lines);
  try {
    return use(out.bytes());
  } finally {
    if (out.capacity <= KEPT_SCRATCH_BYTES) scratch = out;
  }
}

/** `out` holding `lines` as the journal keeps them, one JSON object per line, and nothing else. */
function linesInto(out: JsonBytes, lines: readonly object[]): void {
  out.clear();
  for (const line of lines) {
    out.value(line);
    out.raw("\n");
  }
}

/** Writes all of `bytes` to `fd` on the thread pool. */
function writeAll(fd: number, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const from = (offset: number): void => {
      write(fd, bytes, offset, bytes.length - offset, null, (err, written) => {
        if (err) reject(err);
        else if (offset + written < bytes.length) from(offset + written);
        else resolve();
      });
    };
    from(0);
  });
}

/** Writes lines of JSON in one go (all of a call's lines, or none and one cut short); answers the bytes written. */
function writeLines(fd: number, lines: readonly object[]): number {
  return withLineBytes(lines, (buffer) => {
    let written = 0;
    while (written < buffer.length) written += writeSync(fd, buffer, written);
    return buffer.length;
  });
}

/**
 * Puts `temporary` in `file`'s place; `openFd`: the old file's, open for
 * appending. A file's blocks are freed when its last name and handle go: in
 * the rename itself, had the handle been closed before, with every gate
 * waiting as long as a large file takes to free. With the handle
 * still open the rename only moves a name, and the handle is closed on the
 * thread pool. Where a file open for writing cannot be renamed over
 * (Windows), it is closed first.
 */
function replaceFile(temporary: string, file: string, openFd: number | undefined): void {
  let fd = openFd;
  try {
    renameSync(temporary, file);
  } catch (err) {
    if (fd === undefined) throw err;
    const open = fd;
    // not closed twice, even when this close throws: the number may be the new journal's by then
    fd = undefined;
    closeSync(open);
    renameSync(temporary, file);
  } finally {
    if (fd !== undefined) close(fd, () => undefined);
  }
}

/**
 * An append-only file of JSON lines: each change is written (one write call)
 * before the call that made it returns, so the file is always what is still
 * owed, whenever the process dies. `rewrite` compacts it through a temporary
 * file and a rename, so a crash mid-compaction leaves the old file whole.
 * It survives the process dying (kill -9, OOM); a machine crash may lose what
 * the OS had not yet flushed.
 */
export class DeferJournal {
  private fd: number | undefined;
  /** bytes appended since the last rewrite */
  appended = 0;

  constructor(readonly file: string) {}

  /**
   * The lines written so far. A last line cut short by a crash mid-write is
   * skipped silently; any other unreadable line is named in `problems`.
   */
  read(): { lines: Record<string, unknown>[]; problems: string[] } {
    if (!existsSync(this.file)) return { lines: [], problems: [] };
    const text = readFileSync(this.file, "utf8");
    const raw = text.split("\n");
    const torn = raw.length > 0 && !text.endsWith("\n") ? raw.length - 1 : -1;
    const lines: Record<string, unknown>[] = [];
    const problems: string[] = [];
    raw.forEach((line, i) => {
      if (line === "") return;
      try {
        const parsed = JSON.parse(line) as unknown;
        if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
        if (i === 0 && (parsed as { sendgate?: unknown }).sendgate === HEADER.sendgate) {
          if ((parsed as { v?: unknown }).v !== HEADER.v) throw new Error(`unknown journal version ${String((parsed as { v?: unknown }).v)}`);
          return;
        }
        lines.push(parsed as Record<string, unknown>);
      } catch (err) {
        if (i !== torn) problems.push(`${this.file} line ${i + 1}: ${(err as Error).message}`);
      }
    });
    return { lines, problems };
  }

  /**
   * Replaces the whole file with these lines (atomically), and appends after
   * them from now on. Answers the bytes written (what the next compaction is
   * measured against).
   */
  rewrite(lines: readonly object[]): number {
    mkdirSync(dirname(this.file), { recursive: true });
    const temporary = `${this.file}.tmp`;
    let bytes: number;
    try {
      bytes = withLineBytes([HEADER, ...lines], (text) => {
        writeFileSync(temporary, text);
        return text.length;
      });
    } catch (err) {
      // a full disk: the journal stays as it is, and no half-written copy is left beside it
      rmSync(temporary, { force: true });
      throw err;
    }
    replaceFile(temporary, this.file, this.takeFile());
    this.fd = openSync(this.file, "a");
    this.appended = 0;
    return bytes;
  }

  append(lines: readonly object[]): void {
    if (lines.length === 0) return;
    if (this.fd === undefined) throw new Error(`defer journal ${this.file} is not open`);
    // a crash mid-write leaves whole lines and at most one cut short (skipped when read)
    this.appended += writeLines(this.fd, lines);
  }

  private get partsFile(): string {
    return `${this.file}.parts.tmp`;
  }

  /** Removes what a rewrite in parts left when the process died in it (the journal itself is whole). */
  dropUnfinishedRewrite(): void {
    rmSync(this.partsFile, { force: true });
  }

  /**
   * A rewrite made a part at a time (the caller yields to the event loop
   * between parts): the lines go to a temporary file of their own, and the
   * journal is appended to as before until `finish` puts the temporary file in
   * its place. A crash before then leaves the journal whole.
   */
  beginRewrite(): JournalRewrite {
    mkdirSync(dirname(this.file), { recursive: true });
    const temporary = this.partsFile;
    let fd: number | undefined = openSync(temporary, "w");
    try {
      writeLines(fd, [HEADER]);
    } catch (err) {
      closeSync(fd);
      rmSync(temporary, { force: true });
      throw err;
    }
    let bytes = 0;
    // a part's bytes of its own: they are on the thread pool while the journal appends through the shared scratch
    const part = new JsonBytes(128 * 1024);
    let writing: Promise<unknown> | undefined;
    const closeTemporary = (): void => {
      const open = fd;
      fd = undefined;
      if (open === undefined) return;
      // a part still being written writes through this handle: its number must be no other file's until that write ends
      if (writing) void writing.then(() => close(open, () => undefined));
      else closeSync(open);
    };
    return {
      get bytes() {
        return bytes;
      },
      get pending() {
        return part.length;
      },
      add(line) {
        if (fd === undefined) throw new Error("the rewrite is over");
        if (writing) throw new Error("the rewrite's last part is still being written");
        part.value(line);
        part.raw("\n");
      },
      flush() {
        if (fd === undefined) return Promise.reject(new Error("the rewrite is over"));
        if (writing) return Promise.reject(new Error("the rewrite's last part is still being written"));
        const length = part.length;
        const written = writeAll(fd, part.bytes()).finally(() => {
          writing = undefined;
        });
        writing = written.catch(() => undefined);
        return written.then(() => {
          bytes += length;
          part.clear();
        });
      },
      settle() {
        if (fd === undefined) return Promise.reject(new Error("the rewrite is over"));
        const settling = fd;
        return new Promise((resolve, reject) => fdatasync(settling, (err) => (err ? reject(err) : resolve())));
      },
      finish: (lines) => {
        if (fd === undefined) throw new Error("the rewrite is over");
        bytes += writeLines(fd, lines);
        closeTemporary();
        try {
          replaceFile(temporary, this.file, this.takeFile());
        } finally {
          // the new file, or the old journal still whole if the rename failed
          this.fd = openSync(this.file, "a");
        }
        this.appended = 0;
      },
      abandon() {
        closeTemporary();
        rmSync(temporary, { force: true });
      },
    };
  }

  close(): void {
    this.closeFile();
  }

  /** The journal's handle, no longer the journal's: the caller closes it. */
  private takeFile(): number | undefined {
    const fd = this.fd;
    this.fd = undefined;
    return fd;
  }

  private closeFile(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
