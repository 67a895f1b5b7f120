import type {
  AdmissionStore, ClaimOutcome, HistoryAppend, ClaimRequest, CounterOutcome, CounterReading, CounterSpec, InspectRequest, RecordRequest, ReleaseAnswer, ReleaseRequest,
  Settled, StoreState, SuppressionCheck, SuppressionOutcome, SuppressionWrite, ThroughputOutcome, ThroughputRefund, ThroughputRequest,
} from "./admissionStore";
import { joinedMark, markMember, markTokens, markValue, withoutMarkToken } from "../suppression/markValue";
import { gcraKeepMs, gcraRefund, gcraStep } from "../throughput/gcra";
import { counterBounds, digestOf, EXPIRY_GRACE_MS, memberDigest, packTail, RECORD_TOKEN, tokenOf } from "./counterEntry";
import { StateHolder } from "./stateEmitter";
import { flatKey } from "./flatKey";
import { drain, dropExpired } from "./sweepParts";
import { setImmediate as nextTurn } from "node:timers/promises";
import { MemoryHistory } from "../history/memoryHistory";
import { JsonBytes } from "../jsonBytes";
import { entriesOf, expiresAtOf, packed, writePackedJson, repacked, type Entry, type FieldWrite, type PackedCounters } from "./packedCounters";
import { GIVE_BACK_HORIZON_MS, quotaKeepMs, quotaStep, savedLimit, type QuotaOutcome, type QuotaRequest } from "../caps/totals/quotaStep";

/** entries per part of a snapshot's text (a few ms of work each) */
export const SNAPSHOT_SLICE = 400;
/** a part also ends once it has written this many bytes (a few large entries: a recipient's long counter lists, block-list hashes) */
const PART_BYTES = 64 * 1024;

/**
 * Writes `,"name":[…]` of one map's entries into `out`, those `live` keeps,
 * with a step after every `slice` entries or `partBytes` written.
 */
function* listParts<V>(
  out: JsonBytes, name: string, map: Map<string, V>, live: (value: V) => boolean, write: (key: string, value: V) => void,
  slice: number, partBytes = PART_BYTES,
): Generator<void, void, undefined> {
  out.raw(`,"${name}":[`);
  let made = 0;
  let partFrom = out.length;
  for (const [key, value] of map) {
    if (!live(value)) continue;
    if (made > 0) out.raw(",");
    write(key, value);
    if (++made % slice === 0 || out.length - partFrom >= partBytes) {
      yield;
      partFrom = out.length;
    }
  }
  out.raw("]");
}

const always = (): boolean => true;

export type { Entry } from "./packedCounters";

interface Mark {
  member: string;
  expiresAt: number;
}

/** Everything a memory store holds, as JSON: what it saves and loads. */
export interface MemorySnapshot {
  version: 2;
  counters: [string, { expiresAt: number; fields: [string, Entry[]][] }][];
  hashes: [string, [string, string][]][];
  marks: [string, Mark][];
  /** total caps' shared counters (absent in files written before total caps) */
  quotas?: [string, { expiresAt: number | null; fields: [string, string][] }][];
  /** throughput ceilings' TATs, wall-clock µs (absent in files written before they were kept) */
  ceilings?: [string, { tat: number; expiresAt: number }][];
  /** total caps' spends given back (counter key -> [spend id, when spent]), as lua/quota.lua's sorted set keeps them (absent in older files) */
  givenBacks?: [string, [string, number][]][];
}

const SWEEP_EVERY_MS = 60_000;
/** entries a sweep looks at between two turns of the event loop: few enough that no gate waits for them */
export const SWEEP_SLICE = 2_000;

/** a give-back that found nothing of its attempt */
const NOTHING_GIVEN: ReleaseAnswer = Object.freeze({ given: 0, handed: 0 });

export type Clock = () => number;

const wallClock: Clock = () => Math.floor(performance.timeOrigin + performance.now());

/**
 * A counter's entries at `now`: those still kept (as [ts, tail, …] pairs), and
 * of them the times of those that count; `holder`: the token of the member's
 * counted entry.
 */
function readCounter(hash: PackedCounters | undefined, spec: CounterSpec, now: number, digest: number): { kept: number[]; times: number[]; held: boolean; holder: number } {
  const { from, keepFrom } = counterBounds(spec, now);
  const kept: number[] = [];
  const times: number[] = [];
  let holder = -1;
  const at = entriesOf(hash, spec.field);
  for (let i = at.from; i < at.to; i += 2) {
    const ts = (hash as PackedCounters)[i] as number;
    if (ts < keepFrom) continue;
    const tail = (hash as PackedCounters)[i + 1] as number;
    kept.push(ts, tail);
    if (ts >= from) {
      times.push(ts);
      if (holder < 0 && digestOf(tail) === digest) holder = tokenOf(tail);
    }
  }
  return { kept, times, held: holder >= 0, holder };
}

/** The [ts, tail, …] pairs of `field` as they stand. */
function pairsOf(hash: PackedCounters | undefined, field: string): number[] {
  const at = entriesOf(hash, field);
  return (hash ?? []).slice(at.from, at.to) as number[];
}

/**
 * The attempts that hold another attempt's entry (a copy of the msg admitted
 * as a retry of it) are listed beside the counter, as lua/lib/counter_entries.lua
 * lists them in `<counter>!co`: a give-back of the entry's own attempt hands
 * the entry to one of them, so the slot goes with the last give-back.
 */
function coField(field: string): string {
  return `${field}!co`;
}

/** Whether [ts, tail, …] `pairs` hold an entry of `tail`. */
function holdsTail(pairs: readonly number[], tail: number): boolean {
  for (let i = 1; i < pairs.length; i += 2) if (pairs[i] === tail) return true;
  return false;
}

/** `pairs` without the entries of `tail`. */
function withoutTail(pairs: readonly number[], tail: number): number[] {
  const left: number[] = [];
  for (let i = 0; i < pairs.length; i += 2) if (pairs[i + 1] !== tail) left.push(pairs[i], pairs[i + 1]);
  return left;
}

/** The index of the first of `holders` (pairs) of the msg of `digest`, or -1. */
function heirOf(holders: readonly number[], digest: number): number {
  for (let i = 0; i < holders.length; i += 2) if (digestOf(holders[i + 1]) === digest) return i;
  return -1;
}

/** What a map holds under `key` and has not expired at `now` (`expiresAt` reads its expiry): an expired one is dropped, as Redis would. */
function live<T>(map: Map<string, T>, key: string, now: number, expiresAt: (value: T) => number): T | undefined {
  const value = map.get(key);
  if (value !== undefined && expiresAt(value) <= now) {
    map.delete(key);
    return undefined;
  }
  return value;
}

const expiryOf = (value: { expiresAt: number }): number => value.expiresAt;

/** How long a counter hash is kept after a write to `spec`'s counter at `now` (SPEC §5: its window and a grace). */
function keptUntil(spec: CounterSpec, now: number): number {
  return counterBounds(spec, now).until + EXPIRY_GRACE_MS;
}

/** ms until a full counter has a free slot: its period's reset, or enough of its oldest entries ageing out. */
function freeInMs(spec: CounterSpec, times: number[], now: number): number | null {
  if (spec.max <= 0) return null;
  if (spec.resetAt) return Math.max(0, spec.resetAt - now);
  times.sort((a, b) => a - b);
  return Math.max(0, times[times.length - spec.max] + spec.windowMs - now);
}

/**
 * The embedded store: the same algorithms as the scripts in lua/, in one
 * process. JavaScript runs a call to completion before the next, so each
 * call is atomic without locks.
 */
export class MemoryStore implements AdmissionStore {
  readonly kind = "memory" as const;
  /** in-process and synchronous: a call cannot time out, so it needs no guard or queue */
  readonly remote = false;
  private readonly counters = new Map<string, PackedCounters>();
  private readonly hashes = new Map<string, Map<string, string>>();
  private readonly marks = new Map<string, Mark>();
  /**
   * throughput ceilings: TAT in wall-clock µs. Saved with the rest: a queue-mode
   * ceiling's TAT lies as far ahead as its last reserved instant (up to maxWait),
   * and the msgs held for those instants outlive a redeploy, so a store that
   * forgot it would hand new msgs the same instants again.
   */
  private readonly ceilings = new Map<string, { tat: number; expiresAt: number }>();
  /** total caps' counters: the fields of lua/quota.lua; expiresAt null = lifetime */
  private readonly quotas = new Map<string, { fields: Map<string, string>; expiresAt: number | null }>();
  /** per total counter, the spends given back (id -> when spent), each given back once */
  private readonly givenBacks = new Map<string, Map<string, number>>();
  /** calls that changed (or may have changed) what a snapshot holds: a save with none since the last is skipped */
  private mutations = 0;
  private readonly stateHolder = new StateHolder("ready");
  private readonly sweeper: NodeJS.Timeout;
  /** a sweep is running in turns: one that comes due meanwhile is skipped */
  private sweeping = false;
  private closed = false;
  /** decision histories: not in the snapshot (a diagnosis, not state the caps depend on) */
  private readonly history: MemoryHistory;

  constructor(private readonly clock: Clock = wallClock) {
    this.history = new MemoryHistory(clock);
    this.sweeper = setInterval(() => void this.sweepInTurns(), SWEEP_EVERY_MS);
    this.sweeper.unref();
  }

  async claim(requests: readonly ClaimRequest[]): Promise<Settled<ClaimOutcome>[]> {
    this.mutations++;
    return requests.map((request) => this.claimOne(request));
  }

  async record(requests: readonly RecordRequest[]): Promise<Settled<number[]>[]> {
    this.mutations++;
    return requests.map((request) => this.recordOne(request));
  }

  async release(requests: readonly ReleaseRequest[]): Promise<Settled<ReleaseAnswer>[]> {
    this.mutations++;
    return requests.map((request) => this.releaseOne(request));
  }

  async checkSuppression(checks: readonly SuppressionCheck[]): Promise<Settled<SuppressionOutcome>[]> {
    this.mutations++;
    return checks.map((check) => this.checkOne(check));
  }

  async throughput(requests: readonly ThroughputRequest[]): Promise<Settled<ThroughputOutcome>[]> {
    this.mutations++;
    const nowMs = this.clock();
    const nowUs = Math.round(nowMs * 1000);
    return requests.map((r) => {
      const tat = live(this.ceilings, r.key, nowMs, expiryOf)?.tat;
      const step = gcraStep(tat, nowUs, { emissionUs: r.emissionUs, toleranceUs: r.toleranceUs }, Math.max(0, Math.floor(r.maxWaitUs)));
      if (step.allowed) this.ceilings.set(r.key, { tat: step.tat, expiresAt: nowMs + gcraKeepMs(step.tat, nowUs) });
      return { allowed: step.allowed, nowUs, waitUs: step.waitUs };
    });
  }

  async throughputRefund(refunds: readonly ThroughputRefund[]): Promise<Settled<number>[]> {
    this.mutations++;
    const nowMs = this.clock();
    const nowUs = Math.round(nowMs * 1000);
    return refunds.map((r) => {
      const tat = live(this.ceilings, r.key, nowMs, expiryOf)?.tat;
      if (tat === undefined) return 0;
      const back = gcraRefund(tat, nowUs, r, Math.max(0, Math.floor(r.count)), r.lastUs);
      this.ceilings.set(r.key, { tat: back, expiresAt: nowMs + gcraKeepMs(back, nowUs) });
      return back;
    });
  }

  async quota(requests: readonly QuotaRequest[]): Promise<Settled<QuotaOutcome>[]> {
    this.mutations++;
    const now = this.clock();
    return requests.map((r) => {
      let hash = this.quotas.get(r.key);
      if (hash && hash.expiresAt !== null && hash.expiresAt <= now) hash = undefined;
      const fields = hash?.fields ?? new Map<string, string>();
      let givenBack = this.givenBacks.get(r.key);
      if (!givenBack) {
        givenBack = new Map();
        this.givenBacks.set(r.key, givenBack);
      }
      const outcome = quotaStep(fields, r, now, givenBack);
      if (givenBack.size === 0) this.givenBacks.delete(r.key);
      const limit = savedLimit(fields);
      if (!limit) {
        this.quotas.delete(r.key);
      } else {
        const keep = quotaKeepMs(limit, r.leaseMs, now);
        this.quotas.set(r.key, { fields, expiresAt: keep === null ? null : now + keep });
      }
      return outcome;
    });
  }

  async inspect(requests: readonly InspectRequest[]): Promise<Settled<CounterReading[]>[]> {
    const now = this.clock();
    return requests.map((request) => {
      const hash = this.liveCounters(request.key, now);
      return request.counters.map((spec) => {
        const { times } = readCounter(hash, spec, now, -1);
        const full = times.length >= spec.max;
        return { count: times.length, full, retryAfterMs: full ? freeInMs(spec, times, now) : null };
      });
    });
  }

  async writeSuppressions(writes: readonly SuppressionWrite[]): Promise<void> {
    this.mutations++;
    for (const w of writes) {
      this.setField(w.listKey, w.field, w.entry);
      this.setField(w.indexKey, w.indexField, w.entry);
    }
  }

  async listSuppressions(indexKey: string, cursor: string, count: number): Promise<{ cursor: string; entries: string[] }> {
    const all = [...(this.hashes.get(indexKey)?.values() ?? [])];
    const from = Number(cursor) || 0;
    const next = from + count;
    return { cursor: next >= all.length ? "0" : String(next), entries: all.slice(from, next) };
  }

  async appendHistory(appends: readonly HistoryAppend[], keep: number, ttlMs: number): Promise<Settled<number>[]> {
    return this.history.append(appends, keep, ttlMs);
  }

  async readHistory(key: string, keep: number): Promise<string[]> {
    return this.history.read(key, keep);
  }

  state(): StoreState {
    return this.stateHolder.get();
  }

  onStateChange(listener: (state: StoreState) => void): () => void {
    return this.stateHolder.subscribe(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
  }

  /** How many calls have changed the store so far (a save notes it, and skips when it has not moved). */
  get changes(): number {
    return this.mutations;
  }

  /**
   * Writes the snapshot's JSON text (what JSON.stringify(snapshot()) gives)
   * into `out`, a step per at most `slice` entries: a writer yields to the
   * event loop between steps (and may take the bytes written so far), where
   * one piece stalled every gate for the whole save. Calls
   * between steps change entries not yet written: each entry is saved as it
   * stood when its part was written, and the next save has what changed after.
   * Each key stands alone, except a total cap's counter and its give-backs
   * (one quota call changes both): those two lists are one part.
   */
  *snapshotParts(out: JsonBytes, slice = SNAPSHOT_SLICE): Generator<void, void, undefined> {
    const now = this.clock();
    const unexpired = (entry: { expiresAt: number }): boolean => entry.expiresAt > now;
    out.raw('{"version":2');
    // each recipient's text straight from its packed array: a save makes no array per entry
    yield* listParts(out, "counters", this.counters, (hash) => expiresAtOf(hash) > now, (key, hash) => writePackedJson(out, key, hash), slice);
    yield* listParts(out, "hashes", this.hashes, always, (key, fields) => out.value([key, [...fields]]), slice);
    yield* listParts(out, "marks", this.marks, unexpired, (key, mark) => out.value([key, mark]), slice);
    yield* listParts(out, "ceilings", this.ceilings, unexpired, (key, c) => out.value([key, { tat: c.tat, expiresAt: c.expiresAt }]), slice);
    const whole = Number.POSITIVE_INFINITY;
    drain(listParts(out, "quotas", this.quotas, always, (key, hash) => out.value([key, { expiresAt: hash.expiresAt, fields: [...hash.fields] }]), whole, whole));
    drain(listParts(out, "givenBacks", this.givenBacks, always, (key, ids) => out.value([key, [...ids]]), whole, whole));
    out.raw("}");
    yield;
  }

  /** Everything held now, as the state file has it (expired entries left out). */
  snapshot(): MemorySnapshot {
    this.sweep();
    const out = new JsonBytes();
    drain(this.snapshotParts(out, Number.POSITIVE_INFINITY));
    return JSON.parse(out.text()) as MemorySnapshot;
  }

  restore(snapshot: MemorySnapshot): void {
    for (const [key, hash] of snapshot.counters) {
      const counters = packed(hash.expiresAt, hash.fields);
      if (counters !== undefined) this.counters.set(key, counters);
    }
    for (const [key, fields] of snapshot.hashes) this.hashes.set(key, new Map(fields));
    for (const [key, mark] of snapshot.marks) this.marks.set(key, mark);
    for (const [key, hash] of snapshot.quotas ?? []) this.quotas.set(key, { expiresAt: hash.expiresAt, fields: new Map(hash.fields) });
    for (const [key, c] of snapshot.ceilings ?? []) this.ceilings.set(key, { tat: c.tat, expiresAt: c.expiresAt });
    for (const [key, ids] of snapshot.givenBacks ?? []) this.givenBacks.set(key, new Map(ids));
    this.sweep();
  }

  private claimOne(request: ClaimRequest): ClaimOutcome {
    const now = this.clock();
    const digest = memberDigest(request.member);
    const hash = this.liveCounters(request.key, now);
    const read = request.counters.map((spec) => readCounter(hash, spec, now, digest));
    const full = request.counters.map((spec, i) => {
      const r = read[i];
      return !r.held && r.times.length >= spec.max;
    });
    // shadow caps never refuse (SPEC §4 enforcement)
    const blocked = request.counters.some((spec, i) => full[i] && spec.shadow !== true);
    const counters: CounterOutcome[] = request.counters.map((spec, i) => {
      const r = read[i];
      const isFull = full[i] === true;
      const shadow = spec.shadow === true;
      return {
        count: r.times.length, alreadyHeld: r.held, retryAfterMs: isFull ? freeInMs(spec, r.times, now) : null,
        blocking: isFull && !shadow, wouldRefuse: isFull && shadow,
      };
    });
    if (!blocked) {
      const tail = packTail(digest, request.token);
      const writes: FieldWrite[] = [];
      let expiresAt = hash === undefined ? 0 : expiresAtOf(hash);
      request.counters.forEach((spec, i) => {
        // a shadow cap that would refuse is not claimed: it counts what really went out
        if (full[i]) return;
        const r = read[i];
        if (!r.held) r.kept.push(now, tail);
        else if (r.holder !== request.token && r.holder !== RECORD_TOKEN) {
          counters[i].coHeld = true;
          const holders = pairsOf(hash, coField(spec.field));
          if (!holdsTail(holders, tail)) writes.push({ field: coField(spec.field), pairs: [...holders, 0, tail] });
        }
        counters[i].count = r.held ? r.times.length : r.times.length + 1;
        writes.push({ field: spec.field, pairs: r.kept });
        expiresAt = Math.max(expiresAt, keptUntil(spec, now));
      });
      this.putCounters(request.key, hash, expiresAt, writes);
      const history = request.history;
      if (history !== undefined) this.history.addClaimed(request.key, now, history.after, history.keep, history.lifetimeMs);
    }
    return { allowed: !blocked, nowMs: now, counters };
  }

  private recordOne(request: RecordRequest): number[] {
    const now = this.clock();
    const digest = memberDigest(request.member);
    const hash = this.liveCounters(request.key, now);
    const writes: FieldWrite[] = [];
    let expiresAt = hash === undefined ? 0 : expiresAtOf(hash);
    const counts = request.counters.map((spec) => {
      const r = readCounter(hash, spec, now, digest);
      if (!r.held) r.kept.push(now, packTail(digest, RECORD_TOKEN));
      writes.push({ field: spec.field, pairs: r.kept });
      expiresAt = Math.max(expiresAt, keptUntil(spec, now));
      return r.held ? r.times.length : r.times.length + 1;
    });
    this.putCounters(request.key, hash, expiresAt, writes);
    return counts;
  }

  private releaseOne(request: ReleaseRequest): ReleaseAnswer {
    const now = this.clock();
    if (request.kind === "mark") {
      const mark = this.liveMark(request.key, now);
      if (!mark) return NOTHING_GIVEN;
      const left = withoutMarkToken(mark.member, request.value);
      if (left === undefined) return NOTHING_GIVEN;
      if (left !== "") {
        this.marks.set(request.key, { member: left, expiresAt: mark.expiresAt });
        return { given: 0, handed: 1 };
      }
      this.marks.delete(request.key);
      return { given: 1, handed: 0 };
    }
    let hash = this.liveCounters(request.key, now);
    if (!hash) return NOTHING_GIVEN;
    const digest = memberDigest(request.member);
    const mine = packTail(digest, request.token);
    let given = 0;
    let handed = 0;
    for (const field of request.fields) {
      // this attempt held another's entry: it lets go of it, and the entry stays
      const co = pairsOf(hash, coField(field));
      let holders = withoutTail(co, mine);
      const at = entriesOf(hash, field);
      const writes: FieldWrite[] = [];
      if (at.to > 0) {
        const left: number[] = [];
        for (let i = at.from; i < at.to; i += 2) {
          const ts = hash[i] as number;
          const tail = hash[i + 1] as number;
          if (tail !== mine) {
            left.push(ts, tail);
            continue;
          }
          // another attempt of the same msg holds this entry too: it is handed to that one, not removed
          const heir = heirOf(holders, digest);
          if (heir >= 0) {
            left.push(ts, holders[heir + 1]);
            holders = [...holders.slice(0, heir), ...holders.slice(heir + 2)];
            handed += 1;
          } else {
            given += 1;
          }
        }
        writes.push({ field, pairs: left });
      }
      if (co.length > 0 && holders.length !== co.length) writes.push({ field: coField(field), pairs: holders });
      if (writes.length > 0) {
        hash = this.putCounters(request.key, hash, expiresAtOf(hash), writes);
        if (!hash) break;
      }
    }
    return { given, handed };
  }

  private checkOne(check: SuppressionCheck): SuppressionOutcome {
    const list = this.hashes.get(check.listKey);
    for (const field of [check.channel, "*"]) {
      const entry = list?.get(field);
      if (entry !== undefined) return { kind: "listed", field, entry };
    }
    if (check.markKey === undefined) return { kind: "clear", mark: "none" };
    const now = this.clock();
    const mark = this.liveMark(check.markKey, now);
    if (!mark) {
      this.marks.set(flatKey(check.markKey), { member: markValue(check.member, check.token), expiresAt: now + check.markWindowMs });
      return { kind: "clear", mark: "new" };
    }
    const first = markMember(mark.member);
    if (first === check.member) {
      // this attempt's own mark, or one made before tokens (no attempt gives it back)
      if (mark.member === first || markTokens(mark.member).includes(check.token)) return { kind: "clear", mark: "held" };
      // another attempt's (a copy of the msg): this one holds it too, and the mark goes with the last give-back
      this.marks.set(check.markKey, { member: joinedMark(mark.member, check.token), expiresAt: mark.expiresAt });
      return { kind: "clear", mark: "joined" };
    }
    return { kind: "duplicate", firstMember: first, retryAfterMs: Math.max(0, mark.expiresAt - now) };
  }

  /** `key`'s counters with `writes` applied (gone when no field is left): what it holds now. */
  private putCounters(key: string, hash: PackedCounters | undefined, expiresAt: number, writes: readonly FieldWrite[]): PackedCounters | undefined {
    const next = repacked(hash, expiresAt, writes);
    if (next === undefined) this.counters.delete(key);
    else this.counters.set(hash === undefined ? flatKey(key) : key, next);
    return next;
  }

  private liveCounters(key: string, now: number): PackedCounters | undefined {
    return live(this.counters, key, now, expiresAtOf);
  }

  private setField(key: string, field: string, value: string | undefined): void {
    let fields = this.hashes.get(key);
    if (value === undefined) {
      fields?.delete(field);
      if (fields?.size === 0) this.hashes.delete(key);
      return;
    }
    if (!fields) this.hashes.set(key, (fields = new Map<string, string>()));
    fields.set(field, value);
  }

  private liveMark(key: string, now: number): Mark | undefined {
    return live(this.marks, key, now, expiryOf);
  }

  /** Drops what has expired, everywhere at once: before a snapshot is made, after one is read. */
  private sweep(): void {
    drain(this.sweepParts(Number.POSITIVE_INFINITY));
  }

  /**
   * The periodic sweep, a slice of entries per turn of the event loop: one
   * pass over every recipient held every gate of the process for as long as
   * it took. Reads skip what has expired anyway, so a slow sweep only frees
   * memory later.
   */
  async sweepInTurns(slice = SWEEP_SLICE): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      for (const parts = this.sweepParts(slice); !this.closed && parts.next().done !== true;) await nextTurn();
    } finally {
      this.sweeping = false;
    }
  }

  private *sweepParts(slice: number): Generator<void, void, undefined> {
    const clock = this.clock;
    yield* this.history.sweepParts(slice);
    yield* dropExpired(this.counters, (hash, now) => expiresAtOf(hash) <= now, clock, slice);
    yield* dropExpired(this.marks, (mark, now) => mark.expiresAt <= now, clock, slice);
    yield* dropExpired(this.ceilings, (ceiling, now) => ceiling.expiresAt <= now, clock, slice);
    yield* dropExpired(this.quotas, (quota, now) => quota.expiresAt !== null && quota.expiresAt <= now, clock, slice);
    // as the sorted set's ZREMRANGEBYSCORE: ids older than the horizon can no longer be given back anyway
    yield* dropExpired(this.givenBacks, (ids, now) => {
      for (const [id, at] of ids) if (at < now - GIVE_BACK_HORIZON_MS) ids.delete(id);
      return ids.size === 0;
    }, clock, slice);
  }
}
