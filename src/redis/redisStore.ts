import calculateSlot from "cluster-key-slot";
import Redis, { Cluster, type RedisOptions } from "ioredis";
import type {
  EarlyAnswer, AdmissionStore, ClaimOutcome, ClaimRequest, HistoryAppend, CounterOutcome, CounterReading, InspectRequest, RecordRequest, ReleaseAnswer, ReleaseRequest,
  Settled, StoreState, SuppressionCheck, SuppressionOutcome, SuppressionWrite, ThroughputOutcome, ThroughputRefund, ThroughputRequest,
} from "../core/store/admissionStore";
import { entryTail, RECORD_TOKEN } from "../core/store/counterEntry";
import { claimArgs, countersArgs, type Arg } from "./scriptArgs";
import { FirstConnection } from "./firstConnection";
import { HeardFrom } from "./heardFrom";
import { guardConnect } from "./connectGuard";
import { StateHolder } from "../core/store/stateEmitter";
import { withScripts } from "./scripts";
import { clusterSeeds, quitRedis } from "./connection";
import { bySlot } from "./slotGroups";
import type { GiveBack, QuotaOutcome, QuotaRequest } from "../core/caps/totals/quotaStep";
import { StoreUnavailableError } from "../core/errors";
import { roundTrip } from "../core/sendQueue/roundTrip";
import { markValue } from "../core/suppression/markValue";
import { asStoreFailure, isMidMigration } from "../core/store/storeFaults";
import { IntegerText } from "./integerText";

type RedisClient = Redis | Cluster;
type ScriptCall = (numKeys: number, ...keysAndArgs: Arg[]) => Promise<unknown>;

/** The scripts this store calls (defined by scripts.ts); what each answers is its batch's to read (ScriptBatch). */
interface StoreScripts {
  sendgateClaim: ScriptCall;
  sendgateInspect: ScriptCall;
  sendgateRecord: ScriptCall;
  sendgateRelease: ScriptCall;
  sendgateSuppression: ScriptCall;
  sendgateGcra: ScriptCall;
  sendgateGcraRefund: ScriptCall;
  sendgateQuota: ScriptCall;
  sendgateHistoryAppend: ScriptCall;
}

/** Bulk writes go out in slices, so a 10,000-entry import never builds one giant batch. */
const WRITE_SLICE = 1000;

export interface RedisStoreOptions {
  url?: string;
  /** cluster seed nodes, `host:port` */
  clusterNodes?: string[];
  password?: string;
  /** how long after the store is opened its calls wait for the first connection (then they fail, the fail mode deciding) */
  connectGraceMs?: number;
  /**
   * cluster: how long one master may deliver nothing before its share of a
   * batch fails as timeouts on its own, the other masters' answers kept (set
   * a little under the send timeout, so a stalled master does not time out
   * the whole batch, whose timeout hears every master)
   */
  slotDeadlineMs?: number;
  onError?: (err: Error) => void;
}

const NEVER_FREES = -2;

/**
 * the wait for the first connection: calls made in the store's first second
 * wait for it, later ones fail at once until it connects, so the first
 * verdict on a store that is not there comes within SPEC §9's 1.5 s
 */
const CONNECT_GRACE_MS = 1000;

/**
 * The wait between attempts to reconnect, one Redis or a cluster: at most a
 * quarter second, so real verdicts are back well within a second of the store
 * returning, however long it was away (SPEC §9), without a redeploy.
 */
function reconnectDelay(attempt: number): number {
  return Math.min(50 * attempt, 250);
}

function connectionOptions(password: string | undefined): RedisOptions {
  return {
    ...(password ? { password } : {}),
    // a send must not wait behind reconnects: fail it and let the fail mode decide
    maxRetriesPerRequest: 0,
    enableOfflineQueue: true,
    // guardConnect times the attempts, after the loop has read the connects a blocked loop kept waiting
    connectTimeout: 0,
    retryStrategy: reconnectDelay,
  };
}

function createClient(options: RedisStoreOptions): RedisClient {
  if (options.clusterNodes && options.clusterNodes.length > 0) {
    return new Cluster(clusterSeeds(options.clusterNodes), {
      redisOptions: connectionOptions(options.password),
      clusterRetryStrategy: reconnectDelay,
      enableOfflineQueue: true,
      // a call over keys of a slot being moved is refused (TRYAGAIN) until all its keys are on one master: give up
      // at once rather than after ~0.7 s of retries, and let batch() send its items one by one (isMidMigration)
      retryDelayOnTryAgain: 0,
      // TRYAGAIN, ASK and MOVED each count: a move is followed in one or two, a mid-move refusal is given up in a few ms
      maxRedirections: 6,
    });
  }
  return new Redis(options.url ?? "redis://127.0.0.1:6379", connectionOptions(options.password));
}

/** The key an item's cluster slot is found by. */
function slotKeyOf<I>(script: ScriptBatch<I, unknown, unknown>, item: I): string {
  return script.keyOf ? script.keyOf(item) : ((script.keysOf as (item: I) => string[])(item)[0]);
}

/** The KEYS of a call of these items, in order. */
function keysOf<I>(script: ScriptBatch<I, unknown, unknown>, items: readonly I[]): string[] {
  const { keyOf } = script;
  if (keyOf) {
    const keys = new Array<string>(items.length);
    for (let i = 0; i < items.length; i++) keys[i] = keyOf(items[i]);
    return keys;
  }
  return items.flatMap(script.keysOf as (item: I) => string[]);
}

/**
 * A script call's encoding of some items, and how to read each item's answer
 * back from its reply: an array (most scripts), or a text (R, as its Lua file
 * says it answers).
 */
interface ScriptBatch<I, O, R = unknown[]> {
  call: keyof StoreScripts;
  /** each item's one key (most scripts): read with no array per item */
  keyOf?: (item: I) => string;
  /** each item's keys, its slot's first, when it has more than one */
  keysOf?: (item: I) => string[];
  /** the arguments of these items, in order */
  argsOf(items: readonly I[]): Arg[];
  /** every item's answer, in order */
  read(reply: R, items: readonly I[]): O[];
}

/** the outcome of a slot taken now in a counter that was not full, by the count after it: most counters of most claims */
const FRESH_SLOTS: Readonly<CounterOutcome>[] = Array.from({ length: 64 }, (_, count) =>
  Object.freeze({ count, alreadyHeld: false, retryAfterMs: null, blocking: false, wouldRefuse: false }));

/** A fresh slot's outcome: shared (frozen) for the usual counts, so a claim's answer makes no object per counter. */
function freshSlot(count: number): CounterOutcome {
  return FRESH_SLOTS[count] ?? { count, alreadyHeld: false, retryAfterMs: null, blocking: false, wouldRefuse: false };
}

/** A send's status in claim.lua's answer: allowed with a new slot in every cap, only the counts after (1: allowed, 0: refused, each cap's count, held and retry after). */
const FRESH = 2;

const claimBatch: ScriptBatch<ClaimRequest, ClaimOutcome, string> = {
  call: "sendgateClaim",
  keyOf: (r) => r.key,
  argsOf: claimArgs,
  read: (reply, items) => {
    const numbers = new IntegerText(reply);
    const nowMs = numbers.next();
    return items.map((r) => {
      const status = numbers.next();
      if (status === FRESH) {
        const fresh = new Array<CounterOutcome>(r.counters.length);
        for (let i = 0; i < fresh.length; i++) fresh[i] = freshSlot(numbers.next());
        return { allowed: true, nowMs, counters: fresh };
      }
      const allowed = status === 1;
      const counters: CounterOutcome[] = r.counters.map((spec) => {
        const count = numbers.next();
        const held = numbers.next();
        const retry = numbers.next();
        if (held === 0 && retry === -1) return freshSlot(count);
        const full = retry >= 0 || retry === NEVER_FREES;
        const shadow = spec.shadow === true;
        const outcome: CounterOutcome = { count, alreadyHeld: held >= 1, retryAfterMs: retry >= 0 ? retry : null, blocking: full && !shadow, wouldRefuse: full && shadow };
        if (held === 2) outcome.coHeld = true;
        return outcome;
      });
      return { allowed, nowMs, counters };
    });
  },
};

const recordBatch: ScriptBatch<RecordRequest, number[], string> = {
  call: "sendgateRecord",
  keyOf: (r) => r.key,
  argsOf: (items) => countersArgs(items, (r) => entryTail(r.member, RECORD_TOKEN)),
  read: (reply, items) => {
    const numbers = new IntegerText(reply);
    numbers.next(); // the script's clock: a record needs none
    return items.map((r) => r.counters.map(() => numbers.next()));
  },
};

const releaseBatch: ScriptBatch<ReleaseRequest, ReleaseAnswer> = {
  call: "sendgateRelease",
  keyOf: (r) => r.key,
  argsOf: (items) => items.flatMap((r) => (r.kind === "mark" ? ["m", r.value] : ["c", entryTail(r.member, r.token), r.fields.length, ...r.fields])),
  read: (reply, items) => items.map((_, i) => ({ given: Number(reply[2 * i]), handed: Number(reply[2 * i + 1]) })),
};

/** The counter hash's field of the recipient's decision history: its cursor, and with a slot number its entries (lua/lib/counter_entries.lua). */
const HISTORY_FIELD = "|h";

/** A history write (lua/history/append.lua): made per write, for its size and lifetime. */
function historyBatch(keep: number, ttlMs: number): ScriptBatch<HistoryAppend, number> {
  return {
    call: "sendgateHistoryAppend",
    keyOf: (a) => a.key,
    // the entries in one argument, a line each in the order of KEYS: the client writes each argument apart
    argsOf: (items) => {
      let text = "";
      for (let i = 0; i < items.length; i++) text += (i === 0 ? "" : "\n") + items[i].entry;
      return [keep, ttlMs, text];
    },
    read: (_, items) => items.map(() => 1),
  };
}

const inspectBatch: ScriptBatch<InspectRequest, CounterReading[], string> = {
  call: "sendgateInspect",
  keyOf: (r) => r.key,
  argsOf: (items) => countersArgs(items),
  read: (reply, items) => {
    const numbers = new IntegerText(reply);
    numbers.next(); // the script's clock: a reading needs none
    return items.map((r) => r.counters.map(() => {
      const count = numbers.next();
      const retry = numbers.next();
      return { count, retryAfterMs: retry >= 0 ? retry : null, full: retry !== -1 };
    }));
  },
};

/** A check as sent: `markOnly`, the mark alone (its block list read apart, a cluster slot mid-move). */
type SentCheck = SuppressionCheck & { markOnly?: boolean };

const suppressionBatch: ScriptBatch<SentCheck, SuppressionOutcome> = {
  call: "sendgateSuppression",
  keysOf: (c) => (c.markKey === undefined ? [c.listKey] : c.markOnly ? [c.markKey] : [c.listKey, c.markKey]),
  argsOf: (items) => items.flatMap((c) => [c.markKey === undefined ? 1 : c.markOnly ? -1 : 2, c.channel, markValue(c.member, c.token), c.markWindowMs]),
  read: (reply, items) => items.map((_, i) => {
    const [kind, a, b] = [Number(reply[3 * i]), reply[3 * i + 1], reply[3 * i + 2]];
    if (kind === 1) return { kind: "listed", field: String(a), entry: String(b) };
    if (kind === 2) return { kind: "duplicate", firstMember: String(a), retryAfterMs: Math.max(0, Number(b)) };
    const mark = Number(a);
    return { kind: "clear", mark: mark === 1 ? "new" : mark === 2 ? "held" : mark === 3 ? "joined" : "none" };
  }),
};

const gcraBatch: ScriptBatch<ThroughputRequest, ThroughputOutcome> = {
  call: "sendgateGcra",
  keyOf: (r) => r.key,
  argsOf: (items) => items.flatMap((r) => [r.emissionUs, r.toleranceUs, Math.max(0, Math.floor(r.maxWaitUs))]),
  read: (reply, items) => {
    const nowUs = Number(reply[0]);
    return items.map((_, i) => ({ allowed: Number(reply[1 + 2 * i]) === 1, nowUs, waitUs: Number(reply[2 + 2 * i]) }));
  },
};

const gcraRefundBatch: ScriptBatch<ThroughputRefund, number> = {
  call: "sendgateGcraRefund",
  keyOf: (r) => r.key,
  argsOf: (items) => items.flatMap((r) => [r.emissionUs, Math.max(0, Math.floor(r.count)), r.lastUs, r.toleranceUs]),
  read: (reply, items) => items.map((_, i) => Number(reply[1 + i])),
};

function packGiveBacks(list: readonly GiveBack[]): string {
  return list.map((g) => `${g.bucket}:${g.id}:${g.atMs}`).join(",");
}

const quotaBatch: ScriptBatch<QuotaRequest, QuotaOutcome> = {
  call: "sendgateQuota",
  // the counter and the set of its spends given back share the counter's hash tag (one slot)
  keysOf: (r) => [r.key, `${r.key}:r`],
  argsOf: (items) => items.flatMap((r) => [
    r.leaseId, r.leaseMs, r.max, r.windowMs, r.bucketMs, r.calendar ? 1 : 0,
    r.spend, r.record, packGiveBacks(r.refunds), packGiveBacks(r.frees), r.keep, r.want,
  ]),
  read: (reply, items) => {
    const nowMs = Number(reply[0]);
    return items.map((_, i) => {
      const v = (j: number): number => Number(reply[1 + 11 * i + j]);
      const retry = v(10);
      return {
        nowMs, accepted: v(0), bucket: v(1), granted: v(2), refunded: v(3), given: textOf(reply[1 + 11 * i + 4]), lapsed: v(5) === 1,
        held: v(6), used: v(7), leased: v(8), leases: v(9), retryAfterMs: retry >= 0 ? retry : null,
      };
    });
  },
};

/**
 * One Redis answers a batch in one script call, so batches can be large. A
 * cluster needs one call per hash slot, and recipients rarely share one: a
 * batch costs about as many calls as it holds, so it must be small enough to
 * be answered within the timeout, with more of them at once.
 */
const BATCHING = { redis: { maxBatch: 256, maxInFlight: 2 }, "redis-cluster": { maxBatch: 32, maxInFlight: 16 } } as const;

export class RedisStore implements AdmissionStore {
  readonly kind: "redis" | "redis-cluster";
  private readonly slotDeadlineMs: number | undefined;
  readonly remote = true;
  readonly batching: { maxBatch: number; maxInFlight: number };
  readonly client: RedisClient;
  private readonly stateHolder = new StateHolder("connecting");
  private readonly firstConnection: FirstConnection;
  private readonly heard = new HeardFrom();
  private everReady = false;
  private closing = false;

  constructor(options: RedisStoreOptions = {}) {
    this.kind = options.clusterNodes && options.clusterNodes.length > 0 ? "redis-cluster" : "redis";
    this.slotDeadlineMs = options.slotDeadlineMs;
    this.batching = BATCHING[this.kind];
    this.client = createClient(options);
    withScripts(this.client);
    this.firstConnection = new FirstConnection(options.connectGraceMs ?? CONNECT_GRACE_MS, (ready) => this.client.once("ready", ready));
    // a cluster's masters one by one, as `slots` names them (host:port): a call to one is timed by that master's silence
    if (this.client instanceof Cluster) {
      this.client.on("+node", (node: Redis) => {
        guardConnect(node);
        this.heard.watch(node, `${node.options.host}:${node.options.port}`);
      });
    } else {
      guardConnect(this.client);
      this.heard.watch(this.client);
    }
    this.client.on("ready", () => {
      this.everReady = true;
      this.stateHolder.set("ready");
    });
    const down = (): void => {
      if (!this.closing) this.stateHolder.set(this.everReady ? "down" : "connecting");
    };
    this.client.on("close", down);
    this.client.on("reconnecting", down);
    this.client.on("error", (err: Error) => options.onError?.(err));
  }

  claim(requests: readonly ClaimRequest[], early?: EarlyAnswer<ClaimOutcome>): Promise<Settled<ClaimOutcome>[]> {
    return this.batch(claimBatch, requests, early);
  }

  record(requests: readonly RecordRequest[], early?: EarlyAnswer<number[]>): Promise<Settled<number[]>[]> {
    return this.batch(recordBatch, requests, early);
  }

  release(requests: readonly ReleaseRequest[], early?: EarlyAnswer<ReleaseAnswer>): Promise<Settled<ReleaseAnswer>[]> {
    return this.batch(releaseBatch, requests, early);
  }

  checkSuppression(checks: readonly SuppressionCheck[], early?: EarlyAnswer<SuppressionOutcome>): Promise<Settled<SuppressionOutcome>[]> {
    // a check refused mid-move is a failure, never told early: it is asked again below and told with the rest
    const answered = this.batch(suppressionBatch, checks, early);
    return this.kind === "redis-cluster" ? answered.then((answers) => this.checkMidMove(checks, answers)) : answered;
  }

  /** A cluster's checks refused mid-move (their list and mark on two masters) asked again, one key at a time. */
  private async checkMidMove(checks: readonly SuppressionCheck[], answers: Settled<SuppressionOutcome>[]): Promise<Settled<SuppressionOutcome>[]> {
    const moving = checks.flatMap((c, i) => (c.markKey !== undefined && isMidMigration(answers[i]) ? [i] : []));
    if (moving.length === 0) return answers;
    // the block list and the mark of a slot mid-move are on two masters: the list alone, then (not listed) the mark alone,
    // each one key, which follows the move
    const lists = await this.batch(suppressionBatch, moving.map((i) => {
      const { markKey: _mark, ...listOnly } = checks[i];
      return listOnly;
    }));
    const clear: number[] = [];
    lists.forEach((answer, j) => {
      const i = moving[j];
      if (!(answer instanceof Error) && answer.kind === "clear") clear.push(i);
      else answers[i] = answer;
    });
    const marks = await this.batch(suppressionBatch, clear.map((i) => ({ ...checks[i], markOnly: true })));
    marks.forEach((answer, j) => { answers[clear[j]] = answer; });
    return answers;
  }

  inspect(requests: readonly InspectRequest[], early?: EarlyAnswer<CounterReading[]>): Promise<Settled<CounterReading[]>[]> {
    return this.batch(inspectBatch, requests, early);
  }

  throughput(requests: readonly ThroughputRequest[], early?: EarlyAnswer<ThroughputOutcome>): Promise<Settled<ThroughputOutcome>[]> {
    return this.batch(gcraBatch, requests, early);
  }

  throughputRefund(refunds: readonly ThroughputRefund[], early?: EarlyAnswer<number>): Promise<Settled<number>[]> {
    return this.batch(gcraRefundBatch, refunds, early);
  }

  quota(requests: readonly QuotaRequest[], early?: EarlyAnswer<QuotaOutcome>): Promise<Settled<QuotaOutcome>[]> {
    return this.batch(quotaBatch, requests, early);
  }

  /**
   * The block list (what sends are checked against) and the org's index (what
   * the admin API lists) sit in different slots, on a cluster often on
   * different masters, so their writes land in no fixed order unless ordered:
   * an entry is enforced before it is listed, and unlisted before it stops
   * being enforced. A listing never shows an opt-out that sends still ignore
   * (before, on a cluster, a redeploy right after a listing could drop the
   * block-list write still in flight).
   */
  async writeSuppressions(writes: readonly SuppressionWrite[]): Promise<void> {
    // no await when connected: the write goes out before this tick ends, ahead of the checks of msgs that came after it
    const connecting = this.whenUsable();
    if (connecting) await connecting;
    for (let from = 0; from < writes.length; from += WRITE_SLICE) {
      const slice = writes.slice(from, from + WRITE_SLICE);
      await Promise.all(slice.map((w) => w.entry === undefined
        ? this.client.hdel(w.indexKey, w.indexField)
        : this.client.hset(w.listKey, w.field, w.entry)));
      await Promise.all(slice.map((w) => w.entry === undefined
        ? this.client.hdel(w.listKey, w.field)
        : this.client.hset(w.indexKey, w.indexField, w.entry)));
    }
  }

  async listSuppressions(indexKey: string, cursor: string, count: number): Promise<{ cursor: string; entries: string[] }> {
    const connecting = this.whenUsable();
    if (connecting) await connecting;
    const [next, flat] = await this.client.hscan(indexKey, cursor, "COUNT", count);
    return { cursor: next, entries: flat.filter((_, i) => i % 2 === 1) };
  }

  appendHistory(appends: readonly HistoryAppend[], keep: number, ttlMs: number): Promise<Settled<number>[]> {
    return this.batch(historyBatch(keep, ttlMs), appends);
  }

  async readHistory(key: string, keep: number): Promise<string[]> {
    const connecting = this.whenUsable();
    if (connecting) await connecting;
    // the ring's cursor, then its slots (lua/lib/counter_entries.lua historyWrites): the oldest is at the cursor
    const fields = [HISTORY_FIELD];
    for (let slot = 0; slot < keep; slot++) fields.push(`${HISTORY_FIELD}${slot}`);
    const [cursor, ...slots] = await this.client.hmget(key, ...fields);
    const from = Number(cursor ?? 0) % keep;
    const entries: string[] = [];
    for (let i = 0; i < keep; i++) {
      const entry = slots[(from + i) % keep];
      if (entry) entries.push(entry);
    }
    return entries;
  }

  state(): StoreState {
    return this.stateHolder.get();
  }

  onStateChange(listener: (state: StoreState) => void): () => void {
    return this.stateHolder.subscribe(listener);
  }

  /** Resolves once the socket is closed, not merely when QUIT was answered. */
  async close(): Promise<void> {
    this.closing = true;
    this.firstConnection.close();
    await quitRedis(this.client);
  }

  private get scripts(): StoreScripts {
    return this.client as unknown as StoreScripts;
  }

  /**
   * Many items in one script call. On a cluster every call must stay in one
   * hash slot: the items go in one call per slot (each item's keys share its
   * recipient's tag), all sent at once, and a slot whose call fails fails only
   * its own items. Each call's answers are told `early`, as soon as they are
   * read, so answers read from one socket are told in the order their calls
   * were sent, whatever else their batches still wait for.
   */
  private async batch<I, O, R>(script: ScriptBatch<I, O, R>, items: readonly I[], early?: EarlyAnswer<O>): Promise<Settled<O>[]> {
    if (items.length === 0) return [];
    // no await when connected: the call is written before this tick ends, so a store that answers at once is read
    // as soon as the tick is over, whatever else the tick still does (a burst's other msgs), not a tick later
    const connecting = this.whenUsable();
    if (connecting) await connecting;
    const groups = this.kind === "redis-cluster" ? bySlot(items, (item) => slotKeyOf(script, item)) : [items.map((_, i) => i)];
    const out = new Array<Settled<O>>(items.length);
    // one master stalled must not time out the others' answers, nor the others' answers keep its calls waiting: each
    // slot's call has its own deadline, counted by its master's silence
    const deadline = this.kind === "redis-cluster" ? this.slotDeadlineMs : undefined;
    // `tell`: the call's answers go to `early` up to its first failure; those after it wait for the whole batch, so an item
    // asked again (a check mid-move) is told before the later items of its slot, its recipient's among them
    const call = async (indexes: readonly number[], tell: EarlyAnswer<O> | undefined): Promise<void> => {
      const group = indexes.map((i) => items[i]);
      const keys = keysOf(script, group);
      // the script answers what its batch reads (R): the Lua file and its batch are written together
      const sent = this.scripts[script.call](keys.length, ...keys, ...script.argsOf(group)) as Promise<R>;
      const reply = await (deadline === undefined ? sent : roundTrip(sent, deadline, () => this.masterHeardAt(keys[0])));
      let telling = tell;
      script.read(reply, group).forEach((answer, j) => {
        out[indexes[j]] = answer;
        if (answer instanceof Error) telling = undefined;
        else telling?.(indexes[j], answer);
      });
    };
    await Promise.all(groups.map(async (indexes) => {
      try {
        await call(indexes, early);
      } catch (err) {
        if (indexes.length > 1 && isMidMigration(err)) {
          // the slot is moving: Redis refuses a call over keys of it split between two masters (TRYAGAIN), where
          // one item's call (one recipient's keys) follows the move (ASK). Nothing of the refused call ran.
          // told with the whole batch, in order: each item's call may follow the move to the other master, so their
          // answers come back in no set order
          await Promise.all(indexes.map((i) => call([i], undefined).catch((failed: unknown) => { out[i] = asStoreFailure(failed); })));
          return;
        }
        const failure = asStoreFailure(err);
        for (const i of indexes) out[i] = failure;
      }
    }));
    return out;
  }

  clockMs(): Promise<number> {
    if (this.kind !== "redis") return Promise.reject(new Error("a cluster's masters each have their own clock"));
    return (this.client as Redis).time().then(([seconds, micros]) => Number(seconds) * 1000 + Number(micros) / 1000);
  }

  heardAt(): number {
    return this.heard.store();
  }

  /** When the master that holds `key`'s slot last delivered anything, on the wait clock (-Infinity: no such master known, or never). */
  private masterHeardAt(key: string): number {
    const master = (this.client as Cluster).slots[calculateSlot(key)]?.[0];
    return master === undefined ? -Infinity : this.heard.of(master);
  }

  whenUsable(): Promise<void> | undefined {
    const state = this.stateHolder.get();
    if (state === "ready") return undefined;
    // connected once and down now: nothing to wait for, the call fails at once (the breaker opens, the fail mode decides)
    if (this.everReady) return Promise.reject(new StoreUnavailableError("not_ready", `redis is ${state}`));
    return this.firstConnection.wait();
  }
}

/** A script's reply element read as text: a bulk string as it is, a number as its digits, nothing as "". */
function textOf(value: unknown): string {
  return typeof value === "string" ? value : typeof value === "number" ? String(value) : "";
}
