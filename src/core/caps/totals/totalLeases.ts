import { randomBytes } from "node:crypto";
import { StoreUnavailableError } from "../../errors";
import type { Lane } from "../../sendQueue/sendQueue";
import type { StoreAccess } from "../../store/storeAccess";
import { holderLeaseId, leaseIdleMs, type GiveBack, type QuotaLimit, type QuotaOutcome, type QuotaRequest } from "./quotaStep";
import { withTimeout } from "../../store/withTimeout";

/** A total cap as one send meets it: its shared counter and limit. */
export interface TotalCounter {
  key: string;
  limit: QuotaLimit;
}

/** A send counted in a total cap: enough to give its slot back (SPEC §5 refunds). */
export interface TotalSpend {
  key: string;
  /** the lease it was spent from */
  lease: string;
  /** the time bucket it was counted in */
  bucket: number;
  /** this spend's own id (`<lease>.<batch>.<index>`): the store gives each spend back once */
  id: string;
  /** when it was counted (the store's clock) */
  atMs: number;
}

/** No slot is left in a total cap: how full it is and when one may free. */
export interface TotalRefusal {
  kind: "refused";
  used: number;
  leased: number;
  retryAfterMs: number | null;
}

/** How a total cap stands, as last read (the usage API, check mode). */
export interface TotalReading {
  used: number;
  leased: number;
  leases: number;
  /** slots this cap-config holds and has not spent */
  local: number;
  max: number;
  /** when no slot is free for anyone: ms until one may free (a bucket leaves the window, a period ends, a lease lapses); null = never */
  retryAfterMs: number | null;
}

/** What a total has left for anyone: its max less what is counted and what every lease holds. */
export function remainingOf(reading: Pick<TotalReading, "max" | "used" | "leased">): number {
  return Math.max(0, reading.max - reading.used - reading.leased);
}

/** A counter this cap-config has not met (a give-back after a redeploy): the store uses the limit the counter saved. */
const SAVED_LIMIT: QuotaLimit = { max: 0, windowMs: -1, bucketMs: 0, calendar: false };

type Waiter = (answer: true | TotalRefusal | StoreUnavailableError) => void;
/** a give-back waiting for its call: answered whether the store took it, or the failure */
interface Given {
  giveBack: GiveBack;
  resolve: (given: boolean) => void;
  reject: (err: StoreUnavailableError) => void;
}
type Spent = (answer: TotalSpend | TotalRefusal | StoreUnavailableError) => void;

/**
 * The spends of one counter that go out in one call. A burst commits
 * thousands of slots per call, so they share one answer and are told by one
 * listener each, not a promise each.
 */
export class SpendBatch {
  size = 0;
  private accepted = 0;
  private spend: Omit<TotalSpend, "id"> | undefined;
  private refusal: TotalRefusal | undefined;
  private failure: StoreUnavailableError | undefined;
  private answered = false;
  private listeners: Array<() => void> = [];
  private settled: Promise<void> | undefined;

  constructor(private readonly id: string) {}

  /** Resolves once the call has answered (or failed). */
  get done(): Promise<void> {
    return this.settled ??= this.answered ? Promise.resolve() : new Promise((resolve) => this.listeners.push(resolve));
  }

  /** Calls `listener` once the call has answered (or failed); at once when it has. */
  onDone(listener: () => void): void {
    if (this.answered) listener();
    else this.listeners.push(listener);
  }

  /** The answer of the spend committed at `index` (once `done`). */
  answer(index: number): TotalSpend | TotalRefusal | StoreUnavailableError {
    if (this.failure) return this.failure;
    if (index >= this.accepted) return this.refusal as TotalRefusal;
    const spend = this.spend as Omit<TotalSpend, "id">;
    return { key: spend.key, lease: spend.lease, bucket: spend.bucket, atMs: spend.atMs, id: `${this.id}.${index}` };
  }

  settle(accepted: number, spend: Omit<TotalSpend, "id">, refusal: TotalRefusal): void {
    this.accepted = accepted;
    this.spend = spend;
    this.refusal = refusal;
    this.tell();
  }

  fail(failure: StoreUnavailableError): void {
    this.failure = failure;
    this.tell();
  }

  private tell(): void {
    this.answered = true;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) listener();
  }
}

/** A committed slot: its place in the batch that reports it. */
export interface SpendTicket {
  batch: SpendBatch;
  index: number;
}

/** One total counter as this cap-config sees it: the slots it holds, and the work waiting for the next call. */
class Lease {
  /** slots held on lease and not yet reserved by a send */
  local = 0;
  /** the store holds a lease of ours (as far as we know) */
  held = false;
  readonly waiters: Waiter[] = [];
  /** spends committed since the last call */
  batch: SpendBatch | undefined;
  readonly records: Spent[] = [];
  refunds: Given[] = [];
  frees: Given[] = [];
  /** slots reserved by sends that have neither committed nor cancelled them yet */
  reserved = 0;
  /** unreserved slots were handed back (idle, close): the next call trims the lease */
  trim = false;
  inFlight = false;
  scheduled = false;
  lastUsed = 0;
  /** sends committed in the current second, and the rate of the seconds before (an EWMA) */
  thisSecond = 0;
  secondStart = 0;
  rate = 0;
  reading: (QuotaOutcome & { at: number }) | undefined;
  settled: Array<() => void> = [];

  constructor(readonly key: string, public limit: QuotaLimit) {}

  /** its waiters wait for this cap-config's own reserved slots (a commit or cancel wakes them), not for another call */
  parked = false;

  busy(): boolean {
    return (this.waiters.length > 0 && !this.parked) || this.batch !== undefined || this.records.length > 0 || this.refunds.length > 0 || this.frees.length > 0 || this.trim;
  }
}

export interface TotalLeasesOptions {
  access: StoreAccess;
  /** a lease not renewed for this long lapses in the store, and its unspent slots go back to the pool */
  leaseMs: number;
  /** how long a reading may serve check mode */
  readingMs?: number;
  now?: () => number;
}

/**
 * A cap-config's leases on total caps' shared counters (SPEC §4 `counts:
 * "total"`): it takes quota in blocks (about one second of its own sends, at
 * least what is waiting) and reserves slots locally, without a round trip. A
 * reserved slot is reported as spent before its msg leaves, all of a tick's
 * spends in one call, so a crash between reporting and leaving loses a slot,
 * never adds one: the total is never exceeded, and a crashed instance's
 * unspent block returns to the pool when its lease lapses. Unused slots go
 * back after a second without sends, and on close.
 */
export class TotalLeases {
  readonly leaseId: string;
  private readonly leases = new Map<string, Lease>();
  private readonly lane: Lane<QuotaRequest, QuotaOutcome>;
  private readonly now: () => number;
  private readonly idleMs: number;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;
  private batches = 0;

  constructor(private readonly options: TotalLeasesOptions) {
    this.lane = options.access.lane("quota", (store, items, early) => store.quota(items, early), { bounded: false });
    this.now = options.now ?? Date.now;
    this.idleMs = leaseIdleMs(options.leaseMs);
    this.leaseId = holderLeaseId(randomBytes(8).toString("hex"), options.leaseMs);
    this.sweeper = setInterval(() => this.returnIdle(), this.idleMs);
    this.sweeper.unref();
  }

  /** A slot of the counter for one send: at once from the lease, else after the next call brings a block. */
  reserve(key: string, limit: QuotaLimit): true | Promise<true | TotalRefusal | StoreUnavailableError> {
    if (this.tryReserve(key, limit)) return true;
    return new Promise((resolve) => this.waitFor(key, limit, resolve));
  }

  /**
   * `waiter` is told when a slot is reserved for it (true), or why none was:
   * after the next call brings a block. For a send that found the lease empty
   * (tryReserve), without a promise: a burst parks tens of thousands here.
   */
  waitFor(key: string, limit: QuotaLimit, waiter: Waiter): void {
    const lease = this.lease(key, limit);
    lease.lastUsed = this.now();
    if (this.closed) {
      waiter(new StoreUnavailableError("not_ready", "the cap-config is closing"));
      return;
    }
    lease.waiters.push(waiter);
    this.schedule(lease);
  }

  /** A slot of the counter at once from the lease, or false (nothing is queued: `reserve` waits for one). */
  tryReserve(key: string, limit: QuotaLimit): boolean {
    const lease = this.lease(key, limit);
    if (lease.local <= 0 || lease.waiters.length > 0) return false;
    lease.lastUsed = this.now();
    lease.local -= 1;
    lease.reserved += 1;
    return true;
  }

  /** A reserved slot that was not used (another cap refused the send): back into the lease, nothing was reported. */
  cancel(key: string): void {
    const lease = this.leases.get(key);
    if (!lease) return;
    lease.reserved = Math.max(0, lease.reserved - 1);
    lease.local += 1;
    this.serveWaiters(lease);
    if (lease.parked && lease.waiters.length > 0) {
      lease.parked = false;
      this.schedule(lease);
    }
  }

  /** Reports a reserved slot as spent: once its batch is `done`, its answer says whether the store counted it (the msg may leave then). */
  commit(key: string, limit: QuotaLimit): SpendTicket {
    const lease = this.lease(key, limit);
    this.countRate(lease);
    lease.parked = false;
    lease.reserved = Math.max(0, lease.reserved - 1);
    const batch = lease.batch ??= new SpendBatch(`${this.leaseId}.${this.batches++}`);
    this.schedule(lease);
    return { batch, index: batch.size++ };
  }

  /** record mode: counts a send without checking. */
  record(counter: TotalCounter): Promise<TotalSpend | TotalRefusal | StoreUnavailableError> {
    const lease = this.lease(counter.key, counter.limit);
    return new Promise((resolve) => {
      lease.records.push(resolve);
      this.schedule(lease);
    });
  }

  /**
   * Gives a spent slot back: into this cap-config's lease when it came from
   * it, else to the pool. Resolves whether the store took it (a spend is given
   * back once, and not past its window or a day); rejects when the store
   * failed, so the claim stays on the msg.
   */
  refund(spend: TotalSpend): Promise<boolean> {
    const lease = this.leases.get(spend.key) ?? this.lease(spend.key, SAVED_LIMIT);
    return new Promise((resolve, reject) => {
      const given = { giveBack: { bucket: spend.bucket, id: spend.id, atMs: spend.atMs }, resolve, reject };
      if (spend.lease === this.leaseId) lease.refunds.push(given);
      else lease.frees.push(given);
      this.schedule(lease);
    });
  }

  /** How the counter stands: the last reading when it is fresh enough, else a read (nothing is leased by it). */
  async read(counter: TotalCounter, maxAgeMs = this.options.readingMs ?? 250): Promise<TotalReading> {
    const lease = this.lease(counter.key, counter.limit);
    let reading = lease.reading;
    if (!reading || this.now() - reading.at > maxAgeMs) {
      const outcome = await this.options.access.submit(this.lane, request(counter.key, counter.limit, "", this.options.leaseMs, {}));
      reading = { ...outcome, at: this.now() };
      lease.reading = reading;
    }
    // `leased` counts this cap-config's own lease too: its unreserved slots are still this cap-config's to spend
    return { used: reading.used, leased: reading.leased, leases: reading.leases, local: lease.local, max: counter.limit.max, retryAfterMs: reading.retryAfterMs };
  }

  /** Hands every unspent slot back and waits for the calls in flight (at most `timeoutMs`). */
  async close(timeoutMs = 2000): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const done: Promise<void>[] = [];
    for (const lease of this.leases.values()) {
      for (const waiter of lease.waiters.splice(0)) waiter(new StoreUnavailableError("not_ready", "the cap-config is closing"));
      if (lease.local > 0) {
        lease.local = 0;
        lease.trim = true;
      }
      if (lease.busy() || lease.inFlight) {
        done.push(new Promise((resolve) => lease.settled.push(resolve)));
        this.schedule(lease);
      }
    }
    await withTimeout(Promise.all(done), timeoutMs, []);
  }

  private lease(key: string, limit: QuotaLimit): Lease {
    let lease = this.leases.get(key);
    if (!lease) {
      lease = new Lease(key, limit);
      this.leases.set(key, lease);
    } else if (limit !== SAVED_LIMIT) {
      lease.limit = limit;
    }
    return lease;
  }

  private countRate(lease: Lease): void {
    const now = this.now();
    if (now - lease.secondStart >= 1000) {
      const seconds = Math.max(1, Math.floor((now - lease.secondStart) / 1000));
      lease.rate = seconds > 2 ? lease.thisSecond : (lease.rate + lease.thisSecond) / 2;
      lease.thisSecond = 0;
      lease.secondStart = now;
    }
    lease.thisSecond += 1;
  }

  /** About one second of this cap-config's own sends, at least 1. */
  private blockSize(lease: Lease): number {
    return Math.max(1, Math.ceil(Math.max(lease.rate, lease.thisSecond)));
  }

  private schedule(lease: Lease): void {
    if (lease.inFlight || lease.scheduled) return;
    lease.scheduled = true;
    // every spend of this tick rides in one call
    setImmediate(() => {
      lease.scheduled = false;
      void this.call(lease);
    });
  }

  private async call(lease: Lease): Promise<void> {
    if (lease.inFlight) return;
    if (!lease.busy()) {
      this.settle(lease);
      return;
    }
    const batch = lease.batch;
    lease.batch = undefined;
    const records = lease.records.splice(0);
    const refunds = lease.refunds;
    const frees = lease.frees;
    lease.refunds = [];
    lease.frees = [];
    lease.trim = false;
    const waiting = lease.waiters.length;
    const block = this.blockSize(lease);
    const want = this.closed ? 0 : waiting > lease.local ? Math.max(block, waiting - lease.local) : 0;
    // what this cap-config still holds after the spends: slots beyond it (handed back, or granted in an answer that never came) go back to the pool
    const keep = lease.local + lease.reserved;
    lease.inFlight = true;
    let outcome: QuotaOutcome;
    try {
      outcome = await this.options.access.submit(this.lane, request(lease.key, lease.limit, this.leaseId, this.options.leaseMs, {
        spend: batch?.size ?? 0, record: records.length,
        refunds: refunds.map((g) => g.giveBack), frees: frees.map((g) => g.giveBack), keep, want,
      }));
    } catch (err) {
      lease.inFlight = false;
      const failure = err instanceof StoreUnavailableError ? err : new StoreUnavailableError("error", (err as Error).message);
      batch?.fail(failure);
      for (const recorded of records) recorded(failure);
      for (const g of [...refunds, ...frees]) g.reject(failure);
      for (const waiter of lease.waiters.splice(0)) waiter(failure);
      // the next call trims the lease to what this cap-config holds, whatever this one left behind
      lease.trim = lease.held;
      this.settle(lease);
      if (lease.busy()) this.schedule(lease);
      return;
    }
    lease.inFlight = false;
    if (outcome.lapsed && lease.held) lease.local = 0;
    lease.local += outcome.granted + outcome.refunded;
    lease.held = outcome.held > 0;
    lease.reading = { ...outcome, at: this.now() };
    batch?.settle(outcome.accepted, { key: lease.key, lease: this.leaseId, bucket: outcome.bucket, atMs: outcome.nowMs }, refusal(outcome));
    for (const recorded of records) recorded({ key: lease.key, lease: this.leaseId, bucket: outcome.bucket, atMs: outcome.nowMs, id: "" });
    // the store answers each give-back, in order: refunds first, then frees
    [...refunds, ...frees].forEach((g, i) => g.resolve(outcome.given[i] === "1"));
    this.serveWaiters(lease);
    lease.parked = false;
    if (lease.waiters.length > 0 && want > 0 && outcome.granted === 0) {
      // slots of ours that sends reserved and have not committed may still come back (a cancel): wait for them
      if (lease.reserved > 0) lease.parked = true;
      else for (const waiter of lease.waiters.splice(0)) waiter(refusal(outcome));
    }
    this.settle(lease);
    if (lease.busy()) this.schedule(lease);
  }

  private serveWaiters(lease: Lease): void {
    const n = Math.min(lease.local, lease.waiters.length);
    if (n === 0) return;
    lease.local -= n;
    lease.reserved += n;
    // one splice, not a shift per waiter: a burst parks tens of thousands here
    for (const waiter of lease.waiters.splice(0, n)) waiter(true);
  }

  private settle(lease: Lease): void {
    if (lease.inFlight || lease.busy()) return;
    for (const resolve of lease.settled.splice(0)) resolve();
  }

  /** Unspent slots of a counter without sends for a while go back to the pool; long-idle counters are forgotten. */
  private returnIdle(): void {
    const now = this.now();
    for (const [key, lease] of this.leases) {
      if (now - lease.lastUsed < this.idleMs || lease.inFlight || lease.waiters.length > 0) continue;
      if (lease.local > 0) {
        lease.local = 0;
        lease.trim = true;
        this.schedule(lease);
      } else if (!lease.busy() && !lease.scheduled && now - lease.lastUsed > 60_000) {
        this.leases.delete(key);
      }
    }
  }
}

function refusal(outcome: QuotaOutcome): TotalRefusal {
  return { kind: "refused", used: outcome.used, leased: outcome.leased, retryAfterMs: outcome.retryAfterMs };
}

function request(key: string, limit: QuotaLimit, leaseId: string, leaseMs: number, work: Partial<Pick<QuotaRequest, "spend" | "record" | "refunds" | "frees" | "keep" | "want">>): QuotaRequest {
  return {
    key, leaseId, leaseMs,
    max: limit.max, windowMs: limit.windowMs, bucketMs: limit.bucketMs, calendar: limit.calendar,
    spend: work.spend ?? 0, record: work.record ?? 0, refunds: work.refunds ?? [], frees: work.frees ?? [], keep: work.keep ?? -1, want: work.want ?? 0,
  };
}
