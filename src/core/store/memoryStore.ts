import type {
  AdmissionStore, ClaimOutcome, HistoryAppend, ClaimRequest, CounterOutcome, CounterReading, CounterSpec, InspectRequest, RecordRequest, ReleaseAnswer, ReleaseRequest,
  Settled, StoreState, SuppressionCheck, SuppressionOutcome, SuppressionWrite, ThroughputOutcome, ThroughputRefund, ThroughputRequest,
} from "./admissionStore";
import { joinedMark, markMember, markTokens, markValue, withoutMarkToken } from "../suppression/markValue";
import { gcraKeepMs, gcraRefund, gcraStep } from "../throughput/gcra";
import { counterBounds, EXPIRY_GRACE_MS, memberDigest, RECORD_TOKEN } from "./counterEntry";
import { StateHolder } from "./stateEmitter";
import { MemoryHistory } from "../history/memoryHistory";
import { GIVE_BACK_HORIZON_MS, quotaKeepMs, quotaStep, savedLimit, type QuotaOutcome, type QuotaRequest } from "../caps/totals/quotaStep";

/** entries per part of a snapshot's text (a few ms of work each) */
export const SNAPSHOT_SLICE = 400;
/** a part also ends once its text is this long (a few large entries: a recipient's long counter lists, block-list hashes) */
const PART_CHARS = 64 * 1024;

/** `,"name":[…]` of one map's entries (`entry` undefined: left out), in parts of at most `slice` entries or about PART_CHARS. */
function* listParts<V>(name: string, map: Map<string, V>, slice: number, entry: (key: string, value: V) => unknown): Generator<string, void, undefined> {
  let text = `,"${name}":[`;
  let made = 0;
  for (const [key, value] of map) {
    const json = entry(key, value);
    if (json === undefined) continue;
    text += `${made === 0 ? "" : ","}${JSON.stringify(json)}`;
    if (++made % slice === 0 || text.length >= PART_CHARS) {
      yield text;
      text = "";
    }
  }
  yield `${text}]`;
}

/** One counter entry: as lua/caps/claim.lua packs it (ts, digest of the messageId, attempt token). */
export type Entry = [ts: number, digest: number, token: number];

interface CounterHash {
  fields: Map<string, Entry[]>;
  expiresAt: number;
}

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

/** a give-back that found nothing of its attempt */
const NOTHING_GIVEN: ReleaseAnswer = Object.freeze({ given: 0, handed: 0 });

export type Clock = () => number;

const wallClock: Clock = () => Math.floor(performance.timeOrigin + performance.now());

/** A counter's entries at `now`: those still kept, and of them the ones that count; `holder`: the token of the member's counted entry. */
function readCounter(entries: readonly Entry[] | undefined, spec: CounterSpec, now: number, digest: number): { kept: Entry[]; times: number[]; held: boolean; holder: number } {
  const { from, keepFrom } = counterBounds(spec, now);
  const kept: Entry[] = [];
  const times: number[] = [];
  let holder = -1;
  for (const entry of entries ?? []) {
    if (entry[0] < keepFrom) continue;
    kept.push(entry);
    if (entry[0] >= from) {
      times.push(entry[0]);
      if (holder < 0 && entry[1] === digest) holder = entry[2];
    }
  }
  return { kept, times, held: holder >= 0, holder };
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

/** What a map holds under `key` and has not expired at `now`: an expired one is dropped, as Redis would. */
function live<T extends { expiresAt: number }>(map: Map<string, T>, key: string, now: number): T | undefined {
  const value = map.get(key);
  if (value && value.expiresAt <= now) {
    map.delete(key);
    return undefined;
  }
  return value;
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
  private readonly counters = new Map<string, CounterHash>();
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
  /** decision histories: not in the snapshot (a diagnosis, not state the caps depend on) */
  private readonly history: MemoryHistory;

  constructor(private readonly clock: Clock = wallClock) {
    this.history = new MemoryHistory(clock);
    this.sweeper = setInterval(() => this.sweep(), SWEEP_EVERY_MS);
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
      const tat = live(this.ceilings, r.key, nowMs)?.tat;
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
      const tat = live(this.ceilings, r.key, nowMs)?.tat;
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
        const { times } = readCounter(hash?.fields.get(spec.field), spec, now, -1);
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
    clearInterval(this.sweeper);
  }

  /** How many calls have changed the store so far (a save notes it, and skips when it has not moved). */
  get changes(): number {
    return this.mutations;
  }

  /**
   * The snapshot as JSON text (what JSON.stringify(snapshot()) gives), in
   * parts of at most `slice` entries each: a writer yields to the event loop
   * between parts, where one piece stalled every gate (~0.6 s for 100,000
   * recipients). Calls between parts change entries not yet made: each entry
   * is saved as it stood when its part was made, and the next save has what
   * changed after. Each key stands alone, except a total cap's counter and its
   * give-backs (one quota call changes both): those two lists are one part.
   */
  *snapshotParts(slice = SNAPSHOT_SLICE): Generator<string, void, undefined> {
    const now = this.clock();
    yield '{"version":2';
    yield* listParts("counters", this.counters, slice, (key, hash) => (hash.expiresAt <= now ? undefined : [key, { expiresAt: hash.expiresAt, fields: [...hash.fields] }]));
    yield* listParts("hashes", this.hashes, slice, (key, fields) => [key, [...fields]]);
    yield* listParts("marks", this.marks, slice, (key, mark) => (mark.expiresAt <= now ? undefined : [key, mark]));
    yield* listParts("ceilings", this.ceilings, slice, (key, c) => (c.expiresAt <= now ? undefined : [key, { tat: c.tat, expiresAt: c.expiresAt }]));
    const totals = [...listParts("quotas", this.quotas, Number.POSITIVE_INFINITY, (key, hash) => [key, { expiresAt: hash.expiresAt, fields: [...hash.fields] }])];
    totals.push(...listParts("givenBacks", this.givenBacks, Number.POSITIVE_INFINITY, (key, ids) => [key, [...ids]]));
    yield `${totals.join("")}}`;
  }

  /** Everything held now, as the state file has it (expired entries left out). */
  snapshot(): MemorySnapshot {
    this.sweep();
    return JSON.parse([...this.snapshotParts(Number.POSITIVE_INFINITY)].join("")) as MemorySnapshot;
  }

  restore(snapshot: MemorySnapshot): void {
    for (const [key, hash] of snapshot.counters) this.counters.set(key, { expiresAt: hash.expiresAt, fields: new Map(hash.fields) });
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
    const read = request.counters.map((spec) => readCounter(hash?.fields.get(spec.field), spec, now, digest));
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
      request.counters.forEach((spec, i) => {
        // a shadow cap that would refuse is not claimed: it counts what really went out
        if (full[i]) return;
        const r = read[i];
        if (!r.held) r.kept.push([now, digest, request.token]);
        else if (r.holder !== request.token && r.holder !== RECORD_TOKEN) {
          counters[i].coHeld = true;
          const holders = hash?.fields.get(coField(spec.field)) ?? [];
          if (!holders.some((e) => e[1] === digest && e[2] === request.token)) this.write(request.key, spec, [...holders, [0, digest, request.token]], now, coField(spec.field));
        }
        counters[i].count = r.held ? r.times.length : r.times.length + 1;
        this.write(request.key, spec, r.kept, now);
      });
      const history = request.history;
      if (history !== undefined) this.history.addClaimed(request.key, now, history.after, history.keep, history.lifetimeMs);
    }
    return { allowed: !blocked, nowMs: now, counters };
  }

  private recordOne(request: RecordRequest): number[] {
    const now = this.clock();
    const digest = memberDigest(request.member);
    const hash = this.liveCounters(request.key, now);
    return request.counters.map((spec) => {
      const r = readCounter(hash?.fields.get(spec.field), spec, now, digest);
      if (!r.held) r.kept.push([now, digest, RECORD_TOKEN]);
      this.write(request.key, spec, r.kept, now);
      return r.held ? r.times.length : r.times.length + 1;
    });
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
    const hash = this.liveCounters(request.key, now);
    if (!hash) return NOTHING_GIVEN;
    const digest = memberDigest(request.member);
    let given = 0;
    let handed = 0;
    const mine = (e: Entry): boolean => e[1] === digest && e[2] === request.token;
    for (const field of request.fields) {
      // this attempt held another's entry: it lets go of it, and the entry stays
      const co = hash.fields.get(coField(field));
      let holders = co ? co.filter((e) => !mine(e)) : [];
      const entries = hash.fields.get(field);
      if (entries) {
        const left: Entry[] = [];
        for (const e of entries) {
          if (!mine(e)) {
            left.push(e);
            continue;
          }
          // another attempt of the same msg holds this entry too: it is handed to that one, not removed
          const heir = holders.find((h) => h[1] === digest);
          if (heir) {
            left.push([e[0], e[1], heir[2]]);
            holders = holders.filter((h) => h !== heir);
            handed += 1;
          } else {
            given += 1;
          }
        }
        if (left.length === 0) hash.fields.delete(field);
        else hash.fields.set(field, left);
      }
      if (co && holders.length === 0) hash.fields.delete(coField(field));
      else if (co && holders.length !== co.length) hash.fields.set(coField(field), holders);
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
      this.marks.set(check.markKey, { member: markValue(check.member, check.token), expiresAt: now + check.markWindowMs });
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

  private write(key: string, spec: CounterSpec, entries: Entry[], now: number, field = spec.field): void {
    let hash = this.counters.get(key);
    if (!hash || hash.expiresAt <= now) {
      hash = { fields: new Map(), expiresAt: 0 };
      this.counters.set(key, hash);
    }
    hash.fields.set(field, entries);
    hash.expiresAt = Math.max(hash.expiresAt, counterBounds(spec, now).until + EXPIRY_GRACE_MS);
  }

  private liveCounters(key: string, now: number): CounterHash | undefined {
    return live(this.counters, key, now);
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
    return live(this.marks, key, now);
  }

  private sweep(): void {
    const now = this.clock();
    this.history.sweep(now);
    for (const [key, hash] of this.counters) {
      if (hash.expiresAt <= now) this.counters.delete(key);
    }
    for (const [key, mark] of this.marks) {
      if (mark.expiresAt <= now) this.marks.delete(key);
    }
    for (const [key, ceiling] of this.ceilings) {
      if (ceiling.expiresAt <= now) this.ceilings.delete(key);
    }
    for (const [key, quota] of this.quotas) {
      if (quota.expiresAt !== null && quota.expiresAt <= now) this.quotas.delete(key);
    }
    // as the sorted set's ZREMRANGEBYSCORE: ids older than the horizon can no longer be given back anyway
    for (const [key, ids] of this.givenBacks) {
      for (const [id, at] of ids) if (at < now - GIVE_BACK_HORIZON_MS) ids.delete(id);
      if (ids.size === 0) this.givenBacks.delete(key);
    }
  }
}
