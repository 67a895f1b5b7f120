import { StoreUnavailableError } from "../errors";
import type { Deferrals } from "../hold/deferrals";
import { pacedMsgId, pacedReleaseId } from "../hold/heldIds";
import { ABSENT_GATE_KEEP_MS } from "../hold/holdPlan";
import { heldJson, type DeferInput, type DeferredMsg } from "../hold/heldQueue";
import { queuedForm, storedMsg } from "../hold/storedMsg";
import { sha256Hex } from "../sha256";
import { Pacer } from "./pacer";
import { LocalStoreClock, preciseNow, StoreClock } from "./storeClock";

/**
 * A msg due this soon is in flight, not held: it is paced in this process
 * only, as Node-RED's own wires carry a msg, and handed to the durable queue
 * only if the gate closes first (a redeploy, a stop). Writing it durably
 * (and acking it after) would cost two store calls per msg, and the write's
 * round trip could outlast the wait itself, so it left late. Only a crash
 * (SIGKILL, OOM) in that time loses it, as it loses every msg in flight.
 */
export const IN_FLIGHT_MS = 100;

/** A msg this gate holds itself until its instant (leased in the durable queue meanwhile, unless `durable` is false), and the tag of its ceiling. */
interface PacedMsg {
  held: DeferredMsg;
  tag: string;
  /** when it came in, among this gate's msgs: a msg.reset drops the held msgs that came in before it */
  seq: number;
  /** written to the durable queue (or maybe: a hold that met a store fault), so its release acks it there */
  durable: boolean;
}

/** One msg to pace: what the gate reserved for it, and whose it is. */
export interface PaceRequest {
  msg: Record<string, unknown>;
  /** the ceiling's label (msg.admission's throughput_key) and its key in the store */
  label: string;
  ceilingKey: string;
  /** the reserved instant, by the store's clock: µs (exact) and ms rounded up (never early) */
  reservedUs: number;
  dueAt: number;
  recipient: string;
  org: string;
  expiresAt?: number;
  seq: number;
  /** a re-paced msg's release_id, kept from its first holding */
  releaseIdKept?: string;
}

export interface PacedHoldsOptions {
  gate: string;
  deferrals: Deferrals;
  /** the store's kind: the memory store's clock is this process's own */
  storeKind: string;
  /** the store's clock, read once at start (Redis) */
  storeClockMs?: () => Promise<number>;
  /** lets one held msg out at its instant (or flushed); may return the promise of parking it */
  release(held: DeferredMsg, flushed: boolean): void | Promise<void>;
  warn(text: string): void;
  error(text: string, msg?: object): void;
}

/** The tags of the last ceilings seen (most flows pace one or a few): a burst hashes each ceiling once. */
class TagCache {
  private readonly tags = new Map<string, string>();

  of(key: string): string {
    let tag = this.tags.get(key);
    if (tag === undefined) {
      if (this.tags.size >= 1_000) this.tags.clear();
      tag = sha256Hex(key).slice(0, 40);
      this.tags.set(key, tag);
    }
    return tag;
  }
}

/**
 * The msgs a throughput-gate holds until their reserved instants: paced by
 * a timer of this process (no poller round trip between an instant and its
 * msg), each held durably in the queue under a lease meanwhile unless it is
 * due within IN_FLIGHT_MS, acked once released, and handed back to the queue
 * as the gate closes, for the next deployment (or another instance) to
 * release. Knows nothing of Node-RED: the gate lets each msg out.
 */
export class PacedHolds {
  /** the store's clock as this process reads it, and the timer by it: both on the same sub-ms local clock */
  readonly clock: StoreClock | LocalStoreClock;
  private readonly tags = new TagCache();
  private readonly pacer: Pacer<PacedMsg>;
  /** paced msgs held in process only (not durable): the gate's status counts them with the queue's */
  private inProcess = 0;
  /** ids of released durable msgs, acked together once per turn of the loop (msgs released one or two at a time would cost a store call each) */
  private toAck: string[] = [];
  private ackScheduled = false;
  /** acks still on their way: a closing gate waits for them, else its msgs would come back after their lease */
  private readonly acking = new Set<Promise<void>>();
  /** a hold the store did not take is warned of once per run of them (an outage would warn for every held msg) */
  private holdWarned = false;

  constructor(private readonly options: PacedHoldsOptions) {
    this.clock = options.storeKind === "memory" ? new LocalStoreClock() : new StoreClock();
    // a first sample read while the loop is idle: else the first are the answers to a burst's reservations, read only once
    // the burst is taken in, and the gate paces that much late until a prompt answer comes (a late sample never raises it)
    options.storeClockMs?.().then((ms) => this.clock.observe(ms), () => undefined);
    this.pacer = new Pacer<PacedMsg>((due) => this.released(due));
  }

  /** msgs paced in this process only (the queue counts the others) */
  get inProcessOnly(): number {
    return this.inProcess;
  }

  get isStopped(): boolean {
    return this.pacer.isStopped;
  }

  /** The tag a ceiling's held msgs are filed under (a hash: short and key-safe). */
  tagOf(ceilingKey: string): string {
    return this.tags.of(ceilingKey);
  }

  /** Lets out the held msgs due by now (a run of incoming msgs keeps the timer from firing). */
  releaseDue(): void {
    this.pacer.releaseDue();
  }

  /**
   * Holds a msg until its reserved instant: durably (leased to this gate)
   * unless due within IN_FLIGHT_MS, then paced here. A msg the queue cannot
   * keep (its own bad input) throws, for Catch, after `giveBackInstant`; a
   * store fault does not: the msg is paced here all the same.
   */
  async hold(request: PaceRequest, giveBackInstant: () => Promise<unknown>): Promise<void> {
    const { gate } = this.options;
    const tag = this.tags.of(request.ceilingKey);
    const dueLocal = this.clock.toLocal(request.dueAt);
    // a re-paced msg was held durably, and its old entry is acked once this returns: it is written again, however soon it is due
    const durable = request.releaseIdKept !== undefined || dueLocal - preciseNow() >= IN_FLIGHT_MS;
    const now = Date.now();
    const held: DeferInput & { id: string } = {
      id: pacedMsgId(tag, request.reservedUs), gate, dueAt: request.dueAt,
      // a gate that comes back within it re-paces it
      deferrals: 1, firstDeferredAt: now, deadline: request.dueAt + ABSENT_GATE_KEEP_MS,
      // the gate releases the msg itself, as it came (an http in's req and res too): the queue's JSON of it is the only copy
      msg: request.msg,
      meta: {
        ceiling: request.label, recipient: request.recipient, org: request.org, reservedUs: String(request.reservedUs),
        releaseId: request.releaseIdKept ?? pacedReleaseId(),
      },
    };
    if (request.expiresAt !== undefined) held.expiresAt = request.expiresAt;
    const paced: PacedMsg = { held, tag, seq: request.seq, durable };
    if (durable) await this.holdDurably(held, tag, giveBackInstant);
    // closed meanwhile (a redeploy): the queue's pollers release it
    if (!this.pacer.add(dueLocal, paced)) await this.handBack([paced]);
    else if (!durable) this.inProcess++;
  }

  private async holdDurably(held: DeferInput & { id: string }, tag: string, giveBackInstant: () => Promise<unknown>): Promise<void> {
    const { deferrals } = this.options;
    try {
      // held durably but leased to this gate, which releases it by its own timer
      const queued = queuedForm(held.msg);
      await deferrals.hold(queued === held.msg ? held : { ...held, msg: queued }, { tag, leaseUntil: held.dueAt + deferrals.leaseMs });
      this.holdWarned = false;
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) {
        // the msg cannot be held (its own bad input, a msg JSON cannot hold): it goes to Catch and will not use its instant
        await giveBackInstant();
        throw err;
      }
      // A store fault: the hold may yet have landed (a timed-out call often has). The msg keeps its instant and is paced
      // here all the same; its release acks its id, so a copy that landed is not released again when its lease ends.
      // Only a crash before then loses it, as the store could not take it. A hold refused before it was sent (an open
      // circuit) never made the msg's JSON: made here, so a msg the queue could not keep at a close goes to Catch now
      try {
        heldJson(queuedForm(held.msg));
      } catch (bad) {
        await giveBackInstant();
        throw bad;
      }
      if (!this.holdWarned) {
        this.holdWarned = true;
        this.options.warn(`could not hold msgs in the durable queue (${(err as Error).message}): they are paced in this process until the store takes holds again`);
      }
    }
  }

  /**
   * Takes the held msgs of a ceiling that came in before `beforeSeq` out of
   * the pacer (msg.reset, msg.flush): the caller hands each out, then
   * `acked` removes the durable ones from the queue.
   */
  take(tag: string, beforeSeq: number): { held: DeferredMsg[]; acked: () => Promise<void> } {
    const taken = this.pacer.take((p) => p.tag === tag && p.seq < beforeSeq);
    this.leaving(taken);
    const durable = taken.filter((p) => p.durable).map((p) => p.held.id);
    return { held: taken.map((p) => p.held), acked: () => this.options.deferrals.acked(this.options.gate, durable) };
  }

  /** The gate closes: the pacer stops, its msgs go back to the queue, then the last acks go out. */
  async stop(): Promise<void> {
    const left = this.pacer.stop();
    this.leaving(left);
    await this.handBack(left);
    this.flushAcks();
    await Promise.allSettled([...this.acking]);
  }

  private released(due: readonly PacedMsg[]): void {
    this.leaving(due);
    for (const paced of due) {
      try {
        void this.options.release(paced.held, false);
      } catch (err) {
        this.options.warn(`could not release held msg ${paced.held.id}: ${(err as Error).message}`);
      }
    }
    for (const paced of due) if (paced.durable) this.toAck.push(paced.held.id);
    if (this.toAck.length > 0 && !this.ackScheduled) {
      this.ackScheduled = true;
      setImmediate(() => this.flushAcks());
    }
  }

  private flushAcks(): void {
    this.ackScheduled = false;
    if (this.toAck.length === 0) return;
    const ack = this.options.deferrals.acked(this.options.gate, this.toAck);
    this.toAck = [];
    this.acking.add(ack);
    void ack.finally(() => this.acking.delete(ack));
  }

  private leaving(paced: readonly PacedMsg[]): void {
    for (const p of paced) if (!p.durable) this.inProcess--;
  }

  /** Gives paced msgs back to the durable queue (the gate closes): a msg paced in process only is copied as the queue keeps it. */
  private async handBack(paced: readonly PacedMsg[]): Promise<void> {
    const { deferrals, gate } = this.options;
    const kept: PacedMsg[] = [];
    const items: { entry: DeferredMsg; tag: string }[] = [];
    for (const p of paced) {
      try {
        // a durable msg's JSON was taken once already (its hold): it is handed back as it is
        const msg = p.durable ? queuedForm(p.held.msg) : storedMsg(p.held.msg);
        items.push({ entry: msg === p.held.msg ? p.held : { ...p.held, msg }, tag: p.tag });
        kept.push(p);
      } catch (err) {
        this.options.error(`closed holding a msg paced in process only that the queue cannot keep (${(err as Error).message}): it is lost`, p.held.msg);
      }
    }
    // the msgs a closing gate reserves in one turn (a burst still in its intake) go back together
    const failed = await deferrals.handBackInTurn(gate, items);
    if (!failed) return;
    // a msg paced in process only has no lease to come back by: say which are lost
    const left = new Set(failed.left.map((item) => item.entry));
    const lost = kept.filter((p, i) => !p.durable && left.has((items[i] as { entry: DeferredMsg }).entry));
    if (lost.length === 0) return;
    const ids = lost.map((p) => {
      const id = (p.held.msg as { messageId?: unknown }).messageId;
      return typeof id === "string" || typeof id === "number" ? String(id) : p.held.id;
    });
    this.options.error(`closed holding ${lost.length} msg(s) paced in process only, and the store did not take them back (${failed.error.message}): they are lost (messageIds ${ids.slice(0, 10).join(", ")}${ids.length > 10 ? ", …" : ""})`);
  }
}
