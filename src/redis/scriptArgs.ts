import type { ClaimRequest, CounterSpec } from "../core/store/admissionStore";
import type { ClaimHistory } from "../core/history/claimHistory";
import { entryTail } from "../core/store/counterEntry";
import { keepShape } from "../core/keptShapes";

/** A script argument as ioredis sends it. */
export type Arg = string | number | Buffer;

/**
 * The limits (window, max, period, shadow) the counters of one script call
 * share, each sent once: a batch of a thousand claims on the same three caps
 * sends three limits, and each counter names its limit by index
 * (lib/counter_entries.lua readLimits).
 */
const SCANNED_LIMITS = 16;

export class LimitTable {
  /** window, max, period start, reset, shadow: five per limit, in index order */
  private readonly values: number[] = [];
  /** by "window|max|start|reset|shadow", once there are too many limits to scan (recipient limits can make one per claim) */
  private byId: Map<string, number> | undefined;

  index(spec: CounterSpec): number {
    const start = spec.startMs ?? 0;
    const reset = spec.resetAt ?? 0;
    const shadow = spec.shadow === true ? 1 : 0;
    const v = this.values;
    if (this.byId === undefined) {
      // a batch usually shares a handful of limits: comparing numbers beats building a string key per counter
      for (let at = 0; at < v.length; at += 5) {
        if (v[at] === spec.windowMs && v[at + 1] === spec.max && v[at + 2] === start && v[at + 3] === reset && v[at + 4] === shadow) return at / 5 + 1;
      }
      v.push(spec.windowMs, spec.max, start, reset, shadow);
      if (v.length / 5 === SCANNED_LIMITS) {
        this.byId = new Map();
        for (let at = 0; at < v.length; at += 5) this.byId.set(v.slice(at, at + 5).join("|"), at / 5 + 1);
      }
      return v.length / 5;
    }
    const id = `${spec.windowMs}|${spec.max}|${start}|${reset}|${shadow}`;
    let index = this.byId.get(id);
    if (index === undefined) {
      v.push(spec.windowMs, spec.max, start, reset, shadow);
      this.byId.set(id, (index = v.length / 5));
    }
    return index;
  }

  /** the table's arguments, to go before the items' */
  args(): Arg[] {
    return [this.values.length / 5, ...this.values];
  }
}

function sameCounters(last: readonly CounterSpec[] | undefined, counters: readonly CounterSpec[]): boolean {
  if (last === undefined || last.length !== counters.length) return false;
  for (let i = 0; i < counters.length; i++) if (last[i] !== counters[i]) return false;
  return true;
}

/**
 * Counters in one argument, `[<head>,]<field>,<limit index>,...`: the client
 * encodes each argument on its own, several strings each, so a record is one
 * argument (lib/counter_entries.lua readItem, with its entry's tail as head),
 * and so are a check's key (lua/inspect.lua) and a claim's shape (text(), no
 * head). Fields are encoded key parts (no comma). A batch's sends mostly claim
 * the same caps, with the same specs (capEngine counterSpec): a run of them
 * shares its counters' text, made once.
 */
export class CountersText {
  private last: readonly CounterSpec[] | undefined;
  private lastText = "";

  constructor(private readonly limits: LimitTable) {}

  arg(counters: readonly CounterSpec[], head?: number): string {
    const text = this.text(counters);
    return head === undefined ? text.slice(1) : head + text;
  }

  /** `,<field>,<limit index>` per counter */
  text(counters: readonly CounterSpec[]): string {
    return sameCounters(this.last, counters) ? this.lastText : this.make(counters);
  }

  private make(counters: readonly CounterSpec[]): string {
    let text = "";
    for (let i = 0; i < counters.length; i++) {
      const c = counters[i];
      text += `,${c.field},${this.limits.index(c)}`;
    }
    this.last = counters;
    this.lastText = text;
    return text;
  }
}

/**
 * The decision histories a claim call's allowed sends write, each sent once
 * (lua/lib/counter_entries.lua readHistories): a gate's sends on the same
 * caps share one, which the script reads once and each send names by index.
 */
export class HistoryTable {
  /** a call's sends name one or two: a scan finds them */
  private readonly histories: ClaimHistory[] = [];

  /** the history's index in the call (1-based, as the script counts) */
  index(history: ClaimHistory): number {
    const at = this.histories.indexOf(history);
    return at < 0 ? this.histories.push(history) : at + 1;
  }

  /** their count, then `|<keep>|<lifetime ms>|<entry after its time>` each, to go after the limits */
  args(): Arg[] {
    return [this.histories.length, ...this.histories.map((h) => `|${h.keep}|${h.lifetimeMs}${h.after}`)];
  }
}

/**
 * A batch's counters as record.lua and inspect.lua read them: the limit table
 * the items share, then one argument per key (a check's 58 counters would be
 * 117 arguments), led by `headOf` when the script writes an entry.
 */
export function countersArgs<R extends { counters: readonly CounterSpec[] }>(items: readonly R[], headOf?: (r: R) => number): Arg[] {
  const limits = new LimitTable();
  const text = new CountersText(limits);
  const args = items.map((r) => text.arg(r.counters, headOf?.(r)));
  return [...limits.args(), ...args];
}

/**
 * What a claim call's sends ask of their counters, each distinct shape sent
 * once (lua/lib/counter_entries.lua readShapes): the counters' text, then
 * `|<history index>` when the send writes a decision history. A batch's sends
 * mostly have one shape, and a run of sends with the same counters and history
 * is looked up once.
 */
export class ShapeTable {
  readonly texts: string[] = [];
  private readonly byText = new Map<string, number>();
  private lastCounters: readonly CounterSpec[] | undefined;
  private lastHistory: ClaimHistory | undefined;
  private lastIndex = 0;

  constructor(private readonly counters: CountersText, private readonly histories: HistoryTable) {}

  /** the shape's index (0-based, as the script's shape bytes count) */
  index(counters: readonly CounterSpec[], history: ClaimHistory | undefined): number {
    if (history === this.lastHistory && sameCounters(this.lastCounters, counters)) return this.lastIndex;
    const counted = this.counters.text(counters);
    const text = history === undefined ? counted : `${counted}|${this.histories.index(history)}`;
    let index = this.byText.get(text);
    if (index === undefined) {
      index = this.texts.push(text) - 1;
      this.byText.set(text, index);
    }
    this.lastCounters = counters;
    this.lastHistory = history;
    this.lastIndex = index;
    return index;
  }
}

/** The tables a claim call's arguments are made of: the shapes' counters' text names the limits. */
export function claimTables(): { limits: LimitTable; histories: HistoryTable; counters: CountersText; shapes: ShapeTable } {
  const limits = new LimitTable();
  const histories = new HistoryTable();
  const counters = new CountersText(limits);
  return { limits, histories, counters, shapes: new ShapeTable(counters, histories) };
}

// one of each kept for the life of the process (keptShapes.ts)
for (const table of Object.values(claimTables())) keepShape(table);

/** an entry's tail in a claim's arguments: member digest (4 bytes), attempt token (2) */
const TAIL_BYTES = 6;

/**
 * A claim call's arguments (lua/caps/claim.lua): the limits, the histories,
 * every send's entry tail as bytes in one argument, which shape each send has
 * (2 bytes each, empty when all have the first), then the shapes. The script
 * reads a send with two substrings and parses nothing per send: each call of
 * a string function costs Redis's Lua about a thousand instructions.
 */
export function claimArgs(items: readonly ClaimRequest[]): Arg[] {
  const { limits, histories, shapes } = claimTables();
  const tails = Buffer.allocUnsafe(TAIL_BYTES * items.length);
  let shapeOf: Buffer | undefined;
  for (let i = 0; i < items.length; i++) {
    const r = items[i];
    tails.writeUIntBE(entryTail(r.member, r.token), TAIL_BYTES * i, TAIL_BYTES);
    const shape = shapes.index(r.counters, r.history);
    // zeros so far: the sends before it all had the first shape
    if (shape !== 0 && shapeOf === undefined) shapeOf = Buffer.alloc(2 * items.length);
    shapeOf?.writeUInt16BE(shape, 2 * i);
  }
  return [...limits.args(), ...histories.args(), tails, shapeOf ?? "", ...shapes.texts];
}
