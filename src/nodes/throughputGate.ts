import type { Node, NodeAPI, NodeDef, NodeMessage } from "node-red";
import { failReason, type Admission } from "../core/admission";
import type { CapService } from "../core/capService";
import type { DeferInput, DeferredMsg } from "../core/hold/heldQueue";
import { heldJson } from "../core/hold/heldQueue";
import { expiredAdmission } from "../core/hold/heldAdmission";
import { pacedMsgId, pacedReleaseId, releaseId } from "../core/hold/heldIds";
import { SendFieldError, StoreUnavailableError } from "../core/errors";
import { sha256Hex } from "../core/sha256";
import { boundedText, parseSend, readChannel, sendOrg, type Send } from "../core/send";
import { gcraLimit, refundable, type GcraLimit } from "../core/throughput/gcra";
import { THROUGHPUT_KEY_TYPES, throughputKeyProblem } from "../core/settingsChecks";
import { Pacer } from "../core/throughput/pacer";
import { RateMeter } from "../core/throughput/rateMeter";
import { LocalStoreClock, preciseNow, preciseToWall, StoreClock } from "../core/throughput/storeClock";
import { conformingAdmission, resetAdmission, throughputAdmission, type CeilingInfo } from "../core/throughput/throughputAdmission";
import { ceilingKey, ceilingLabel, type CeilingScope } from "../core/throughput/throughputKeys";
import { Gate, type Turn } from "./gate/gate";
import type { Outputs } from "./gate/outputs";
import { httpResponseSetting, secondsSetting } from "./gate/settings";
import { queuedForm, storedMsg } from "./gate/holding";
import { ABSENT_GATE_KEEP_MS, type Whose } from "./gate/parking";
import { giveBackClaims, prepareRefusal, type AdmittedMsg, type RefusalContext } from "./gate/refusal";
import { fieldReader, SEND_FIELDS, SendReader, type FieldProps } from "./gate/sendReader";

const GATE = "throughput-gate";

/** keyType values that name a part of the send rather than a TypedInput source */
const BUILT_IN_KEYS = ["org", "channel"] as const;

export type ThroughputGateDef = NodeDef & FieldProps & {
  config?: string;
  rate?: number | string;
  interval?: number | string;
  burst?: number | string;
  key?: string;
  keyType?: string;
  disposition?: string;
  maxWait?: number | string;
  httpResponse?: boolean | string;
};

export interface ThroughputSettings {
  rate: number;
  intervalSeconds: number;
  burst: number;
  limit: GcraLimit;
  disposition: "queue" | "skip";
  maxWaitMs: number;
  keyType: string;
  key: string;
}

function numberSetting(field: string, value: unknown, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new Error(`${field}: must be a number, got ${JSON.stringify(value)}`);
  return n;
}

/** The gate's own settings, checked at deploy; a bad one names its property (SPEC §11 defaults). */
export function throughputSettings(def: ThroughputGateDef): ThroughputSettings {
  const rate = numberSetting("rate", def.rate, 10);
  const intervalSeconds = numberSetting("interval", def.interval, 1);
  // burst defaults to the rate: a second's worth may go at once, as a provider's per-second contract allows
  const burst = numberSetting("burst", def.burst, Math.max(1, Math.round(rate)));
  const limit = gcraLimit(rate, intervalSeconds, burst);
  const disposition = def.disposition || "queue";
  if (disposition !== "queue" && disposition !== "skip") throw new Error(`disposition: must be queue or skip, got ${JSON.stringify(disposition)}`);
  const keyType = def.keyType || "org";
  const key = def.key ?? "";
  const keyProblem = throughputKeyProblem(keyType, key);
  if (keyProblem === "keyType") throw new Error(`keyType: must be one of ${THROUGHPUT_KEY_TYPES.join(", ")}, got ${JSON.stringify(keyType)}`);
  if (keyProblem === "key") throw new Error(`key: a ${keyType} key needs a property, expression or text`);
  return { rate, intervalSeconds, burst, limit, disposition, maxWaitMs: secondsSetting("maxWait", def.maxWait, 60) * 1000, keyType, key };
}

/**
 * A held msg the queue hands out this long after its instant takes a new one
 * instead of leaving at once: its holder died (its lease ran out) or Node-RED
 * was down past it. A backlog released at once would pass the ceiling; the
 * queue's own pollers are never this late.
 */
export const REPACE_AFTER_MS = 1_000;

/** A re-paced msg was held: whichever way it leaves now, its admission says which holding it was. */
function withReleaseId(admission: Admission, releaseIdKept: string | undefined): Admission {
  if (releaseIdKept !== undefined) admission.release_id = releaseIdKept;
  return admission;
}

/** every msg of an org-keyed ceiling has this scope: one object, not one per msg */
const ORG_SCOPE: CeilingScope = Object.freeze({ kind: "org" });

/** A re-paced msg's gate closed before it could leave: it goes back to the queue. */
class GateClosed extends Error {}

/**
 * The release_id of a held msg: the one it was paced with, kept across a
 * re-pace, so a repeated release is still recognisable (a hash of its entry
 * for one held before release ids were kept beside the msg).
 */
function releaseIdOf(held: DeferredMsg): string {
  return held.meta?.releaseId ?? releaseId(held);
}

/** The held msgs of one ceiling are filed under this tag (a hash: short and key-safe). */
function tagOf(key: string): string {
  return sha256Hex(key).slice(0, 40);
}

/** A msg this gate holds itself until its instant (leased in the durable queue meanwhile, unless `durable` is false), and the tag of its ceiling. */
interface PacedMsg {
  held: DeferredMsg;
  tag: string;
  /** when it came in, among this gate's msgs: a msg.reset drops the held msgs that came in before it */
  seq: number;
  /** written to the durable queue (or maybe: a hold that met a store fault), so its release acks it there */
  durable: boolean;
}

/**
 * A msg due this soon is in flight, not held: it is paced in this process
 * only, as Node-RED's own wires carry a msg, and handed to the durable queue
 * only if the gate closes first (a redeploy, a stop). Writing it durably
 * (and acking it after) would cost two store calls per msg, and the write's
 * round trip could outlast the wait itself, so it left late. Only a crash
 * (SIGKILL, OOM) in that time loses it, as it loses every msg in flight.
 */
export const IN_FLIGHT_MS = 100;

/** The tags of the last ceilings seen (most flows pace one or a few): a burst hashes each ceiling once. */
class TagCache {
  private readonly tags = new Map<string, string>();

  of(key: string): string {
    let tag = this.tags.get(key);
    if (tag === undefined) {
      if (this.tags.size >= 1_000) this.tags.clear();
      tag = tagOf(key);
      this.tags.set(key, tag);
    }
    return tag;
  }
}

function scopeValue(value: unknown): string {
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value !== "string" || value === "") throw new SendFieldError("key", `must be a non-empty string or a number, got ${value === "" ? "an empty string" : typeof value}`);
  return boundedText("key", value);
}


export default function register(RED: NodeAPI): void {
  function ThroughputGate(this: Node, def: ThroughputGateDef): void {
    RED.nodes.createNode(this, def);
    const node = this;
    const httpResponse = httpResponseSetting(def.httpResponse);
    // a ceiling counts msgs, not what they say: only what keys it, refunds earlier claims and bounds the wait is read
    const reader = new SendReader(RED, node, def, SEND_FIELDS.filter((f) => !["timezone", "body", "attributes", "recipientLimits", "category"].includes(f)));
    const gate = new Gate(RED, node, def.config, { type: GATE, needsConfig: "its store holds the shared ceiling", settings: () => throughputSettings(def) });
    const { status, settings, problem } = gate;
    const counts = gate.counts;
    const meter = new RateMeter();
    status.showRate(() => meter.perSecond());
    const keyReader = settings && !(BUILT_IN_KEYS as readonly string[]).includes(settings.keyType)
      ? fieldReader(RED, node, settings.key, settings.keyType)
      : undefined;

    /** what msg.admission says of a ceiling, made once per ceiling seen (most flows pace one or a few), not per msg */
    const ceilingInfos = new Map<string, CeilingInfo>();
    function ceilingOf(s: ThroughputSettings, label: string): CeilingInfo {
      let info = ceilingInfos.get(label);
      if (info === undefined) {
        if (ceilingInfos.size >= 1_000) ceilingInfos.clear();
        info = { key: label, rate: s.rate, interval_seconds: s.intervalSeconds, burst: s.burst };
        ceilingInfos.set(label, info);
      }
      return info;
    }

    /** The ceiling a msg counts against: its org, its org and channel, or the key expression's value (within its org). */
    // async on purpose: a burst's msgs ask the store only after the tick that took them in. Asked during it (made sync), the
    // first reservation went to Redis at once and its answer was read only once the whole burst was in: StoreClock ran that late
    async function scopeOf(msg: NodeMessage, s: ThroughputSettings, channel: () => string): Promise<CeilingScope> {
      if (s.keyType === "org") return ORG_SCOPE;
      if (s.keyType === "channel") return { kind: "channel", channel: channel() };
      let value: unknown;
      try {
        const read = (keyReader as NonNullable<typeof keyReader>)(msg);
        value = read instanceof Promise ? await read : read;
      } catch (err) {
        throw new SendFieldError("key", `could not be read (${(err as Error).message})`);
      }
      return { kind: "key", value: scopeValue(value) };
    }

    // the service when the gate runs (no problem): its own releases and cleanups need it
    const service = problem ? undefined : gate.service;
    // what the gate releases on its own (held msgs): counted, and kept for the next deployment once the gate closes
    const emit = (out: (NodeMessage | null)[], whose?: Whose): void | Promise<void> => gate.emit(out, whose);
    const refusalCtx = (svc: CapService): RefusalContext => ({ RED, node, gate: GATE, service: svc, status, httpResponse });

    /** A held msg at its reserved instant (or flushed): out of allowed; past its expiresAt: out of skipped, defer_expired. */
    function release(held: DeferredMsg, flushed: boolean): void | Promise<void> {
      const s = settings as ThroughputSettings;
      const msg = held.msg as AdmittedMsg;
      const now = new Date();
      const label = held.meta?.ceiling ?? "";
      if (held.expiresAt !== undefined && now.getTime() > held.expiresAt && service) {
        msg.admission = expiredAdmission(msg.admission, held.expiresAt, "throughput_exceeded", { gate: GATE, now }, releaseIdOf(held));
        const expired = giveBack(msg, holderOf(held, service)).then(() => {
          status.skipped();
          return emit([null, msg, null]);
        });
        // a closing gate waits for it: it still sends (or parks) the msg
        gate.track(expired);
        return expired;
      }
      msg.admission = conformingAdmission(msg.admission, ceilingOf(s, label), { gate: GATE, now }, flushed ? now.getTime() : held.dueAt, undefined, releaseIdOf(held));
      meter.add();
      status.allowed();
      // the promise of its parking, should the gate be closing: the queue acks the held entry only once it is parked
      if (!gate.isClosing()) return emit([msg, null, null]);
      const whose: Whose = holderOf(held, service as CapService);
      if (held.expiresAt !== undefined) whose.expiresAt = held.expiresAt;
      return emit([msg, null, null], whose);
    }

    /** Gives back what earlier gates claimed for a held msg that will not go out (reset, expired). */
    async function giveBack(msg: AdmittedMsg, holder: { recipient: string; org: string }): Promise<void> {
      await giveBackClaims({ RED, node }, msg.admission as Admission, holder);
    }

    /** Whose claims a held msg carries: kept beside it in the queue (meta), as the gate read them when it held it. */
    function holderOf(held: DeferredMsg, svc: CapService): { recipient: string; org: string } {
      return { recipient: held.meta?.recipient ?? "", org: held.meta?.org ?? svc.settings.defaultOrg };
    }

    /** A hold the store did not take is warned of once per run of them (a Redis outage would warn for every held msg). */
    const holdFaults = {
      warned: false,
      failed(err: Error): void {
        if (this.warned) return;
        this.warned = true;
        node.warn(`could not hold msgs in the durable queue (${err.message}): they are paced in this process until the store takes holds again`);
      },
      recovered(): void {
        this.warned = false;
      },
    };
    const tags = new TagCache();
    // the store's clock as this process reads it, and the timer by it: both on the same sub-ms local clock (their default)
    const storeClock = service?.store.kind === "memory" ? new LocalStoreClock() : new StoreClock();
    // a first sample read while the loop is idle: else the first are the answers to a burst's reservations, read only once
    // the burst is taken in, and the gate paces that much late until a prompt answer comes (a late sample never raises it)
    if (service?.store.kind === "redis") service.store.clockMs?.().then((ms) => storeClock.observe(ms), () => undefined);
    /** acks of released msgs still on their way: a closing gate waits for them, else its msgs would come back after their lease */
    const acking = new Set<Promise<void>>();
    /** paced msgs held in process only (not durable): the status counts them with the queue's */
    let inProcess = 0;
    status.alsoHolding(() => inProcess);
    const leaving = (paced: readonly PacedMsg[]): void => {
      for (const p of paced) if (!p.durable) inProcess--;
    };
    /**
     * ids of released durable msgs, acked together once per turn of the loop:
     * msgs released one or two at a time as msgs come in (releaseDue) would
     * otherwise cost a store call each
     */
    let toAck: string[] = [];
    let ackScheduled = false;
    function flushAcks(): void {
      ackScheduled = false;
      if (!service || toAck.length === 0) return;
      const ack = service.deferrals.acked(node.id, toAck);
      toAck = [];
      acking.add(ack);
      void ack.finally(() => acking.delete(ack));
    }
    /** releases its own held msgs at their instants; the queue's poller releases those no instance holds (a gate closed, a process died) */
    const pacer = new Pacer<PacedMsg>((due) => {
      leaving(due);
      for (const paced of due) {
        try {
          release(paced.held, false);
        } catch (err) {
          node.warn(`could not release held msg ${paced.held.id}: ${(err as Error).message}`);
        }
      }
      for (const paced of due) if (paced.durable) toAck.push(paced.held.id);
      if (toAck.length > 0 && !ackScheduled) {
        ackScheduled = true;
        setImmediate(flushAcks);
      }
    });
    /** Gives paced msgs back to the durable queue (the gate closes): a msg paced in process only is copied as the queue keeps it. */
    const handBack = async (paced: readonly PacedMsg[]): Promise<void> => {
      const kept: PacedMsg[] = [];
      const items: { entry: DeferredMsg; tag: string }[] = [];
      for (const p of paced) {
        try {
          // a durable msg's JSON was taken once already (its hold): it is handed back as it is
          const msg = p.durable ? queuedForm(p.held.msg as AdmittedMsg) : storedMsg(p.held.msg as AdmittedMsg);
          items.push({ entry: msg === p.held.msg ? p.held : { ...p.held, msg }, tag: p.tag });
          kept.push(p);
        } catch (err) {
          node.error(`closed holding a msg paced in process only that the queue cannot keep (${(err as Error).message}): it is lost`, p.held.msg);
        }
      }
      // the msgs a closing gate reserves in one turn (a burst still in its intake) go back together
      const failed = await service?.deferrals.handBackInTurn(node.id, items);
      if (!failed) return;
      // a msg paced in process only has no lease to come back by: say which are lost
      const left = new Set(failed.left.map((item) => item.entry));
      const lost = kept.filter((p, i) => !p.durable && left.has((items[i] as { entry: DeferredMsg }).entry));
      if (lost.length === 0) return;
      const ids = lost.map((p) => String((p.held.msg as { messageId?: unknown }).messageId ?? p.held.id));
      node.error(`closed holding ${lost.length} msg(s) paced in process only, and the store did not take them back (${failed.error.message}): they are lost (messageIds ${ids.slice(0, 10).join(", ")}${ids.length > 10 ? ", …" : ""})`);
    };

    // what stops on close, after the releases: the pacer hands its msgs back to the queue, then the last acks go out
    const cleanups = [
      () => {
        const left = pacer.stop();
        leaving(left);
        return handBack(left);
      },
      () => {
        // the pacer stopped first (the cleanup before): no release comes after this flush
        flushAcks();
        return Promise.allSettled([...acking]).then(() => undefined);
      },
    ];

    /** msg.reset drops the held msgs of the msg's ceiling (each out of skipped, reset); msg.flush releases them now. */
    async function control(msg: AdmittedMsg, svc: CapService, s: ThroughputSettings, reset: boolean, seq: number): Promise<void> {
      const read = reader.read(msg);
      const raw = read instanceof Promise ? await read : read;
      // a control msg is no send: only what names its ceiling is read (no recipient, tier or messageId asked for)
      const org = sendOrg(raw.org, svc.sendRules);
      const scope = await scopeOf(msg, s, () => readChannel(raw.channel, svc.sendRules));
      const key = ceilingKey(svc.settings.keyPrefix, org, scope);
      const label = ceilingLabel(org, scope);
      const reserved: number[] = [];
      const tag = tags.of(key);
      const each = async (held: DeferredMsg): Promise<void> => {
        if (!reset) {
          await release(held, true);
          return;
        }
        const heldMsg = held.msg as AdmittedMsg;
        heldMsg.admission = { ...resetAdmission(heldMsg.admission, label, { gate: GATE, now: new Date() }), release_id: releaseIdOf(held) };
        reserved.push(Number(held.meta?.reservedUs));
        await giveBack(heldMsg, holderOf(held, svc));
        status.skipped();
        await emit([null, heldMsg, null]);
      };
      // the sends that came in before it are held first (a burst right before a reset is still being taken in), not those after it
      await Promise.allSettled([...admitting].flatMap(([s2, admitted]) => (s2 < seq ? [admitted] : [])));
      // this instance's own first (earliest instants), then those in the shared queue (handed back, or left by a process that died)
      const own = pacer.take((p) => p.tag === tag && p.seq < seq);
      leaving(own);
      await Promise.all(own.map(async (p) => {
        try {
          await each(p.held);
        } catch (err) {
          node.warn(`could not hand out held msg ${p.held.id}: ${(err as Error).message}`);
        }
      }));
      await svc.deferrals.acked(node.id, own.filter((p) => p.durable).map((p) => p.held.id));
      // each dropped msg is out of skipped before its batch is acked: a crash in between repeats it (same release_id), never loses it
      await svc.deferrals.takeTagged(node.id, tag, each);
      // the instants the dropped msgs reserved are free again (msgs held after the reset need not wait behind them),
      // as far as no later reservation, another gate's or instance's, sits behind them
      const given = refundable(reserved, s.limit.emissionUs);
      if (given) {
        await svc.throughput.refund(org, scope, s.limit, given).catch((err: Error) => node.warn(`msg.reset: could not give back ${given.count} reserved instant(s) of ${label}: ${err.message}`));
      }
    }

    /** arrival order of the msgs this gate takes in (sends, control msgs, re-paced msgs) */
    let arrivals = 0;
    /** sends still reserving or holding, by arrival: a control msg waits for those that came in before it */
    const admitting = new Map<number, Promise<void>>();

    async function handle(msg: AdmittedMsg, turn: Turn, svc: CapService, s: ThroughputSettings): Promise<void> {
      const seq = ++arrivals;
      if (Object.hasOwn(msg, "reset") || Object.hasOwn(msg, "flush")) {
        await control(msg, svc, s, Object.hasOwn(msg, "reset"), seq);
        return;
      }
      // held msgs due by now leave in turn with the incoming ones, not after the whole run of them;
      // not once the gate closes (a closing node's sends are dropped): the pacer hands those back
      if (!gate.isClosing()) pacer.releaseDue();
      try {
        await tracked(seq, admit(msg, svc, s, (out) => turn.send(out), (whose) => turn.lineUp(whose), seq));
      } finally {
        if (!gate.isClosing()) pacer.releaseDue();
      }
    }

    async function tracked(seq: number, admitted: Promise<void>): Promise<void> {
      admitting.set(seq, admitted);
      try {
        await admitted;
      } finally {
        admitting.delete(seq);
      }
    }

    /**
     * A msg the queue hands out (handed back at a redeploy, or left by a
     * holder that died): at its instant it leaves; past its expiresAt it is
     * skipped; REPACE_AFTER_MS past its instant it reserves a new one, as a
     * msg arriving now would, keeping its release_id.
     */
    function fromQueue(held: DeferredMsg): void | Promise<void | "kept"> {
      const now = Date.now();
      const expired = held.expiresAt !== undefined && now > held.expiresAt;
      if (expired || now - held.dueAt <= REPACE_AFTER_MS || !service || !settings) return release(held, false);
      // a copy: should the gate close before it leaves, the entry goes back to the queue as it was
      const msg = structuredClone(held.msg) as AdmittedMsg;
      const seq = ++arrivals;
      const repaced = tracked(seq, admit(msg, service, settings, (out) => void gate.emit(out), () => undefined, seq, releaseIdOf(held)));
      return repaced.then(() => undefined, (err: Error) => {
        if (err instanceof GateClosed) return "kept" as const;
        node.error(err, msg);
        return undefined;
      });
    }

    /**
     * A send: reserve its instant, and leave now, be held until then, or be
     * skipped. `releaseIdKept`: a re-paced msg's first release_id; such a msg
     * whose gate closed while it reserved does not leave (GateClosed): Node-RED
     * would drop what a closing node sends, and its entry is still in the queue.
     */
    async function admit(msg: AdmittedMsg, svc: CapService, s: ThroughputSettings, send: (out: Outputs) => void, lineUp: (whose: Whose) => void, seq: number, releaseIdKept?: string): Promise<void> {
      const read = reader.read(msg);
      const sendData: Send = parseSend(read instanceof Promise ? await read : read, svc.sendRules);
      lineUp(sendData);
      const scope = await scopeOf(msg, s, () => sendData.channel);
      const label = ceilingLabel(sendData.org, scope);
      const ceiling = ceilingOf(s, label);
      const startedAt = Date.now();
      // a msg is never held past its own expiresAt
      const untilExpiry = sendData.expiresAt === undefined ? Number.POSITIVE_INFINITY : Math.max(0, sendData.expiresAt - startedAt);
      const maxWaitMs = s.disposition === "skip" ? 0 : Math.min(s.maxWaitMs, untilExpiry);
      const outcome = await svc.throughput.reserve(sendData.org, sendData.channel, scope, s.limit, maxWaitMs);
      if (releaseIdKept !== undefined && pacer.isStopped) throw new GateClosed();
      const now = new Date();
      if (outcome instanceof StoreUnavailableError) {
        msg.admission = withReleaseId(conformingAdmission(msg.admission, ceiling, { gate: GATE, now }, undefined, failReason(outcome)), releaseIdKept);
        status.failOpen();
        send([msg, null, null]);
        return;
      }
      storeClock.observe(outcome.nowUs / 1000);
      if (!outcome.allowed) {
        const refusal = withReleaseId(throughputAdmission(msg.admission, outcome.waitUs / 1000, ceiling, { gate: GATE, channel: sendData.channel, now },
          s.disposition === "queue" ? maxWaitMs : undefined), releaseIdKept);
        await prepareRefusal(refusalCtx(svc), msg, refusal, sendData);
        send([null, msg, null]);
        return;
      }
      // a closing gate whose next node has stopped (a full deploy) hands a msg due now back with its instant, as a held one
      if (outcome.waitUs === 0 && !gate.wouldPark(0)) {
        msg.admission = withReleaseId(conformingAdmission(msg.admission, ceiling, { gate: GATE, now }), releaseIdKept);
        meter.add();
        status.allowed();
        send([msg, null, null]);
        return;
      }
      // the reserved instant, by the store's clock (the queue releases by the same clock); rounded up: never early
      const dueAt = Math.ceil((outcome.nowUs + outcome.waitUs) / 1000);
      const reservedUs = outcome.nowUs + outcome.waitUs;
      // a msg that will not use its instant gives it back, unless something was reserved after it
      const giveBackInstant = (): Promise<unknown> => svc.throughput.refund(sendData.org, scope, s.limit, { count: 1, lastUs: reservedUs }).catch(() => undefined);
      if (sendData.expiresAt !== undefined && preciseToWall(storeClock.toLocal(dueAt)) > sendData.expiresAt) {
        // the wait was bounded from when the msg came in, the instant is the store's: a reservation that reached it late
        // can lie past the msg's expiresAt, where it would never leave. Given back, and skipped now as a wait too long
        await giveBackInstant();
        const refusal = throughputAdmission(msg.admission, outcome.waitUs / 1000, ceiling, { gate: GATE, channel: sendData.channel, now }, maxWaitMs);
        await prepareRefusal(refusalCtx(svc), msg, refusal, sendData);
        send([null, msg, null]);
        return;
      }
      const tag = tags.of(ceilingKey(svc.settings.keyPrefix, sendData.org, scope));
      const dueLocal = storeClock.toLocal(dueAt);
      // a re-paced msg was held durably, and its old entry is acked once this returns: it is written again, however soon it is due
      const durable = releaseIdKept !== undefined || dueLocal - preciseNow() >= IN_FLIGHT_MS;
      const held: DeferInput & { id: string } = {
        id: pacedMsgId(tag, reservedUs), gate: node.id, dueAt,
        // a gate that comes back within it re-paces it
        deferrals: 1, firstDeferredAt: now.getTime(), deadline: dueAt + ABSENT_GATE_KEEP_MS,
        // the gate releases the msg itself, as it came (an http in's req and res too): the queue's JSON of it is the only copy
        msg,
        meta: { ceiling: label, recipient: sendData.recipient, org: sendData.org, reservedUs: String(reservedUs), releaseId: releaseIdKept ?? pacedReleaseId() },
      };
      if (sendData.expiresAt !== undefined) held.expiresAt = sendData.expiresAt;
      const paced: PacedMsg = { held, tag, seq, durable };
      if (paced.durable) {
        try {
          // held durably but leased to this gate, which releases it by its own timer: no poller round trip between the instant and the msg
          const queued = queuedForm(msg);
          await svc.deferrals.hold(queued === msg ? held : { ...held, msg: queued }, { tag, leaseUntil: dueAt + svc.deferrals.leaseMs });
          holdFaults.recovered();
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
            heldJson(queuedForm(msg));
          } catch (bad) {
            await giveBackInstant();
            throw bad;
          }
          holdFaults.failed(err);
        }
      }
      counts?.heldFor("throughput_exceeded");
      // closed meanwhile (a redeploy): the queue's pollers release it
      if (!pacer.add(dueLocal, paced)) await handBack([paced]);
      else if (!paced.durable) inProcess++;
    }

    // msgs handed back or left by a process that died fall due every few ms: wake every ms, and take again at once after a release
    gate.serve(handle, { release: fromQueue, releaseTiming: { minSleepMs: 1, steady: true }, cleanups });
  }

  RED.nodes.registerType(GATE, ThroughputGate);
}
