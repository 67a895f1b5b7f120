import { plainCodec, type DeferCodec } from "./codec";
import { setImmediate as nextTurn } from "node:timers/promises";
import { DeferJournal, type JournalRewrite } from "./journal";
import { dropAt, MAX_MERGED, prepareDeferral, type DeferredMsg } from "./heldQueue";
import { MemoryDeferQueue, type DeferClock, type HeldState, type QueueChange } from "./memoryHeldQueue";

/** A held msg from elsewhere (a file of an older version), with what was merged into it. */
export interface AdoptedHeld {
  entry: DeferredMsg;
  merged: Record<string, unknown>[];
}

/** Held msgs the store takes in as it starts (put in the journal); `adopted` is told once they are there. */
export interface Adoption {
  held: readonly AdoptedHeld[];
  adopted(): void;
}

export interface MemoryDeferStoreOptions {
  /** the journal (in the Node-RED user dir); none = held msgs are not kept past the process */
  file?: string;
  /** held msgs to take in at start (an older version's file): in the journal before `adopted` is told */
  adopt?: Adoption;
  codec?: DeferCodec;
  clock?: DeferClock;
  warn: (text: string) => void;
  onDamaged?: (gate: string, id: string, err: Error) => void;
  /** compact the journal once this much was appended since the last compaction (32 MB) */
  compactAfterBytes?: number;
}

type JournalLine = QueueChange & { g: string };

/** held msgs per part of a compaction made while the queues run (each msg's text is escaped once more into its line) */
export const COMPACT_SLICE = 250;
/** a part also ends once its lines are this many bytes (a few large msgs make a part of their own)… */
export const COMPACT_PART_BYTES = 64 * 1024;
/** …or once it has taken this long: code not yet compiled (the first parts after a deploy) writes lines many times slower */
const COMPACT_PART_MS = 1;

/** How soon a journal that could not be written (a full disk) is first tried again, written whole; then twice as long each time, up to JOURNAL_RETRY_MAX_MS. */
export const JOURNAL_RETRY_MS = 1_000;
const JOURNAL_RETRY_MAX_MS = 30_000;

/** The first `held` msgs of each queue, as lines named by its gate, one at a time. */
class StateLines {
  private at = 0;
  private lines: Iterator<HeldState> | undefined;

  constructor(private readonly queues: readonly { gate: string; queue: MemoryDeferQueue; held: number }[]) {}

  /** The next line; undefined once all are made. */
  next(): HeldState | undefined {
    while (this.at < this.queues.length) {
      if (this.lines === undefined) {
        const { gate, queue, held } = this.queues[this.at];
        this.lines = queue.states(held, gate);
      }
      const next = this.lines.next();
      if (next.done !== true) return next.value;
      this.lines = undefined;
      this.at++;
    }
    return undefined;
  }
}

/** Adds `first` and the lines after it to `rewrite` until the part is full (COMPACT_SLICE, COMPACT_PART_BYTES, COMPACT_PART_MS); answers the next line. */
function addPart(rewrite: JournalRewrite, state: StateLines, first: HeldState): HeldState | undefined {
  const started = performance.now();
  let line: HeldState | undefined = first;
  for (let made = 0; line !== undefined; line = state.next()) {
    rewrite.add(line);
    if (++made === COMPACT_SLICE || rewrite.pending >= COMPACT_PART_BYTES || performance.now() - started >= COMPACT_PART_MS) return state.next();
  }
  return undefined;
}

/** A compaction under way while the queues run: the journal's changes since it began, to follow what it writes. */
interface Compacting {
  rewrite: JournalRewrite;
  since: JournalLine[];
  abandoned: boolean;
}

/**
 * The defer queues of one cap-config on the memory store: one MemoryDeferQueue
 * per gate, and one journal for all of them. Every change is appended to the
 * journal before the call that made it returns, and the journal is compacted
 * on start and on close: what is on disk is always what is still owed, so a
 * process that dies at any point (kill -9, OOM) neither releases a msg again
 * at the next start nor loses one it held.
 */
export class MemoryDeferStore {
  private readonly queues = new Map<string, MemoryDeferQueue>();
  private readonly journal: DeferJournal | undefined;
  private readonly codec: DeferCodec;
  private readonly compactAfter: number;
  private lastCompactBytes = 0;
  private closed = false;
  private compacting: Compacting | undefined;
  private compactionDue = false;
  /** the journal could not be written (a full disk): it misses changes until it is written whole again */
  private journalFault: { retry?: NodeJS.Timeout; delayMs: number } | undefined;

  constructor(private readonly options: MemoryDeferStoreOptions) {
    this.codec = options.codec ?? plainCodec;
    this.compactAfter = options.compactAfterBytes ?? 32 * 1024 * 1024;
    if (!options.file) return;
    const journal = new DeferJournal(options.file);
    // a compaction the process died in: the journal beside it is whole
    journal.dropUnfinishedRewrite();
    const { lines, problems } = journal.read();
    for (const problem of problems) options.warn(`memory defer queue: skipped a damaged line (${problem})`);
    for (const line of lines as unknown as JournalLine[]) {
      if (typeof line.g !== "string") continue;
      const { g, ...change } = line;
      this.queue(g).apply(change);
    }
    if (options.adopt) this.adopt(options.adopt.held);
    this.journal = journal;
    this.compact();
    // only once its msgs are in the journal: a crash before this line adopts them again (same ids: no repeat)
    options.adopt?.adopted();
  }

  /** The queue of one gate (made on first use). */
  queue(gate: string): MemoryDeferQueue {
    let queue = this.queues.get(gate);
    if (!queue) {
      queue = new MemoryDeferQueue({
        gate,
        codec: this.codec,
        ...(this.options.clock ? { clock: this.options.clock } : {}),
        onChanges: (changes) => this.record(gate, changes),
        onDamaged: (id, err) => this.options.onDamaged?.(gate, id, err),
      });
      this.queues.set(gate, queue);
    }
    return queue;
  }

  /** The gates whose queues hold msgs. */
  gates(): string[] {
    return [...this.queues].filter(([, q]) => q.count > 0).map(([gate]) => gate);
  }

  /** Compacts the journal and closes it; the queues refuse new msgs from now on. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const queue of this.queues.values()) void queue.close();
    this.abandonCompaction();
    clearTimeout(this.journalFault?.retry);
    if (this.journal) {
      try {
        this.compact();
      } catch (err) {
        this.options.warn(`memory defer queue: could not write ${String(this.options.file)} as it closed (${(err as Error).message}): `
          + `what it holds is as ${this.journalFault ? "its last whole write" : "the journal"} left it`);
      }
      this.journal.close();
    }
  }

  /**
   * Each change goes to the journal before the call that made it returns. A
   * write that fails (a full disk) fails no call: the change is made and the
   * queue goes on from memory, as a Redis queue would were its persistence
   * failing. Thrown at the caller, a hold already made would have gone to
   * Catch and been released too. The journal, which now misses a change, is
   * not appended to again; it is written whole after JOURNAL_RETRY_MS, then
   * twice as long each time, until that succeeds. Only a crash meanwhile
   * loses what changed since the fault.
   */
  private record(gate: string, changes: QueueChange[]): void {
    if (!this.journal || this.closed) return;
    const lines = changes.map((change) => ({ g: gate, ...change }));
    // one at a time: a spread of a large hand-back's lines (150,000) overflows the stack
    if (this.compacting) for (const line of lines) this.compacting.since.push(line);
    if (this.journalFault) return;
    try {
      this.journal.append(lines);
    } catch (err) {
      this.journalFailed(err as Error);
      return;
    }
    if (!this.compacting && !this.compactionDue && this.journal.appended > this.compactAfter && this.journal.appended > 2 * this.lastCompactBytes) {
      // begun on the next turn: the call that crossed the threshold (a burst's holds) is not made to wait for it too
      this.compactionDue = true;
      setImmediate(() => {
        this.compactionDue = false;
        if (!this.closed && !this.compacting) void this.compactInParts();
      });
    }
  }

  private journalFailed(err: Error): void {
    if (this.journalFault) return;
    this.options.warn(`memory defer queue: could not write ${String(this.options.file)} (${err.message}): the held msgs stay in memory and leave as due, `
      + `but a restart now would lose what changed since; it is written whole again once it can be`);
    this.journalFault = { delayMs: JOURNAL_RETRY_MS };
    this.retryJournal();
  }

  /** Writes the journal whole after a while; each try lists every held msg (~85 ms for 100,000), so a lasting fault is tried less and less often. */
  private retryJournal(): void {
    const fault = this.journalFault;
    if (!fault || this.closed) return;
    const delayMs = fault.delayMs;
    fault.delayMs = Math.min(delayMs * 2, JOURNAL_RETRY_MAX_MS);
    fault.retry = setTimeout(() => {
      fault.retry = undefined;
      // a compaction under way writes every change too: its end is the repair
      if (!this.closed && !this.compacting) void this.compactInParts();
    }, delayMs);
    fault.retry.unref();
  }

  /**
   * What is held now, as the lines that rebuild it, made as they are asked
   * for (each msg's text is a string already, shared, not copied). Of each
   * queue, as many msgs as it held when this was called, first in its order:
   * a Map keeps the msgs it still holds from then before any added since, so
   * every one of them is listed (and maybe some added since, whose changes a
   * compaction also writes after these lines).
   */
  private stateLines(): StateLines {
    // the counts now, not when the first line is asked for
    return new StateLines([...this.queues].map(([gate, queue]) => ({ gate, queue, held: queue.count })));
  }

  /** Compacts at once (on start, on close): the queues do not run meanwhile. */
  private compact(): void {
    const lines: HeldState[] = [];
    const state = this.stateLines();
    for (let line = state.next(); line !== undefined; line = state.next()) lines.push(line);
    // the size the rewrite wrote, as it wrote it: measured again, every msg would be turned into JSON twice
    this.lastCompactBytes = (this.journal as DeferJournal).rewrite(lines);
  }

  /**
   * Compacts while the queues run, a part at a time (COMPACT_SLICE msgs, or
   * fewer once the part is large or has taken COMPACT_PART_MS), each written
   * on the thread pool with a turn of the event loop between, both in
   * listing what is held and in writing it (in one piece it stood every gate
   * still for the whole rewrite). It writes what was held when it began,
   * each msg as it stands when its part is made, then every change made
   * since it began, which the journal also has meanwhile. Replayed in that
   * order they rebuild what is held when it ends, though a msg's changes made before its line are replayed again on
   * it: a remove, and a put that replaces the msg, give the same result on
   * any earlier state; a put that keeps what was merged keeps the line's
   * merged msgs, and a merge already in them is skipped (it names its unit).
   * A crash before the file takes the journal's place leaves the journal
   * whole.
   */
  private async compactInParts(): Promise<void> {
    let compacting: Compacting | undefined;
    try {
      compacting = { rewrite: (this.journal as DeferJournal).beginRewrite(), since: [], abandoned: false };
      this.compacting = compacting;
      const { rewrite } = compacting;
      const state = this.stateLines();
      for (let line = state.next(); line !== undefined;) {
        line = addPart(rewrite, state, line);
        await rewrite.flush();
        await nextTurn();
        if (compacting.abandoned) return;
      }
      await compacting.rewrite.settle();
      if (compacting.abandoned) return;
      // in one go with no turn between: no change can fall between the lines and the file taking over
      compacting.rewrite.finish(compacting.since);
      this.lastCompactBytes = compacting.rewrite.bytes;
      if (this.journalFault) {
        this.journalFault = undefined;
        this.options.warn(`memory defer queue: ${String(this.options.file)} is written whole again`);
      }
    } catch (err) {
      // closed meanwhile (a sync under way fails on the closed file): nothing to warn of, the close compacts
      if (compacting?.abandoned === true) return;
      this.abandonCompaction();
      if (this.journalFault) {
        // warned of once: tried again until it works
        this.retryJournal();
      } else {
        this.options.warn(`memory defer queue: could not compact ${String(this.options.file)} (it keeps growing until the next try): ${(err as Error).message}`);
        // the next try once as much again has been appended
        this.lastCompactBytes = (this.journal as DeferJournal).appended;
      }
    } finally {
      if (compacting !== undefined && this.compacting === compacting) this.compacting = undefined;
    }
  }

  private abandonCompaction(): void {
    const compacting = this.compacting;
    if (!compacting || compacting.abandoned) return;
    compacting.abandoned = true;
    this.compacting = undefined;
    try {
      compacting.rewrite.abandon();
    } catch (err) {
      this.options.warn(`memory defer queue: could not remove a compaction's temporary file: ${(err as Error).message}`);
    }
  }

  private adopt(held: readonly AdoptedHeld[]): void {
    for (const { entry, merged } of held) {
      try {
        const { id, releaseAt, stored } = prepareDeferral(entry);
        const kept = merged.slice(Math.max(0, merged.length - MAX_MERGED));
        this.queue(entry.gate).apply({
          op: "state", id, stored: this.codec.encode(JSON.stringify(stored)), releaseAt,
          ...(dropAt(entry) !== undefined ? { expiresAt: dropAt(entry) as number } : {}),
          merged: kept.map((m) => this.codec.encode(JSON.stringify(m))), units: [], dropped: merged.length - kept.length,
        });
      } catch (err) {
        this.options.warn(`memory defer queue: skipped an adopted msg: ${(err as Error).message}`);
      }
    }
  }
}
