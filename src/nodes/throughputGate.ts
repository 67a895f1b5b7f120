import type { Node, NodeAPI, NodeDef, NodeMessage } from "node-red";
import { failReason } from "../core/admission";
import type { CapService } from "../core/capService";
import { SendFieldError, StoreUnavailableError } from "../core/errors";
import { expiredAdmission } from "../core/hold/heldAdmission";
import type { DeferredMsg } from "../core/hold/heldQueue";
import { parseSend, readChannel, sendOrg, type Send } from "../core/send";
import { refundable } from "../core/throughput/gcra";
import { PacedHolds } from "../core/throughput/pacedHolds";
import { RateMeter } from "../core/throughput/rateMeter";
import { preciseToWall } from "../core/throughput/storeClock";
import { CeilingInfos, conformingAdmission, releaseIdOf, resetAdmission, throughputAdmission, withReleaseId } from "../core/throughput/throughputAdmission";
import { ceilingKey, ceilingLabel, ORG_SCOPE, scopeValue, type CeilingScope } from "../core/throughput/throughputKeys";
import { throughputSettings, type RawThroughputSettings, type ThroughputSettings } from "../core/throughput/throughputSettings";
import { Gate, type Turn } from "./gate/gate";
import { runtimeMessages } from "./gate/i18n";
import type { Outputs } from "./gate/outputs";
import type { Whose } from "./gate/parking";
import { giveBackClaims, prepareRefusal, type AdmittedMsg } from "./gate/refusal";
import { httpResponseSetting } from "./gate/settings";
import { fieldReader, SEND_FIELDS, SendReader, type FieldProps } from "./gate/sendReader";

export { IN_FLIGHT_MS } from "../core/throughput/pacedHolds";
export { throughputSettings, type ThroughputSettings } from "../core/throughput/throughputSettings";

const GATE = "throughput-gate";

/** keyType values that name a part of the send rather than a TypedInput source */
const BUILT_IN_KEYS: readonly string[] = ["org", "channel"];

export type ThroughputGateDef = NodeDef & FieldProps & RawThroughputSettings & { config?: string; httpResponse?: boolean | string };

/**
 * A held msg the queue hands out this long after its instant takes a new one
 * instead of leaving at once: its holder died (its lease ran out) or Node-RED
 * was down past it. A backlog released at once would pass the ceiling; the
 * queue's own pollers are never this late.
 */
export const REPACE_AFTER_MS = 1_000;

/** A re-paced msg's gate closed before it could leave: it goes back to the queue. */
class GateClosed extends Error {}

export default function register(RED: NodeAPI): void {
  function ThroughputGate(this: Node, def: ThroughputGateDef): void {
    RED.nodes.createNode(this, def);
    const node = this;
    const httpResponse = httpResponseSetting(def.httpResponse);
    // a ceiling counts msgs, not what they say: only what keys it, refunds earlier claims and bounds the wait is read
    const reader = new SendReader(RED, node, def, SEND_FIELDS.filter((f) => !["timezone", "body", "attributes", "recipientLimits", "category"].includes(f)));
    const gate = new Gate(RED, node, def.config, { type: GATE, needsConfig: "its store holds the shared ceiling", settings: () => throughputSettings(def, runtimeMessages(RED)) });
    const { status, settings, problem } = gate;
    const meter = new RateMeter();
    status.showRate(() => meter.perSecond());
    const keyReader = settings && !BUILT_IN_KEYS.includes(settings.keyType) ? fieldReader(RED, node, settings.key, settings.keyType) : undefined;
    const ceilings = settings ? new CeilingInfos(settings) : undefined;
    // the service when the gate runs (no problem): its own releases and cleanups need it
    const service = problem ? undefined : gate.service;
    const emit = (out: (NodeMessage | null)[], whose?: Whose): void | Promise<void> => gate.emit(out, whose);
    const paced = service ? new PacedHolds({
      gate: node.id, deferrals: service.deferrals, storeKind: service.store.kind,
      ...(service.store.kind === "redis" && service.store.clockMs ? { storeClockMs: () => (service.store.clockMs as () => Promise<number>)() } : {}),
      release, warn: (text) => node.warn(text), error: (text, msg) => node.error(text, msg as NodeMessage),
    }) : undefined;
    status.alsoHolding(() => paced?.inProcessOnly ?? 0);

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

    /** Whose claims a held msg carries: kept beside it in the queue (meta), as the gate read them when it held it. */
    function holderOf(held: DeferredMsg, svc: CapService): { recipient: string; org: string } {
      return { recipient: held.meta?.recipient ?? "", org: held.meta?.org ?? svc.settings.defaultOrg };
    }

    /** A held msg at its reserved instant (or flushed): out of allowed; past its expiresAt: out of skipped, defer_expired (its claims given back). */
    function release(held: DeferredMsg, flushed: boolean): void | Promise<void> {
      const msg = held.msg as AdmittedMsg;
      const now = new Date();
      if (held.expiresAt !== undefined && now.getTime() > held.expiresAt && service) {
        msg.admission = expiredAdmission(msg.admission, held.expiresAt, "throughput_exceeded", { gate: GATE, now }, releaseIdOf(held));
        const expired = giveBackClaims({ RED, node }, msg.admission, holderOf(held, service)).then(() => {
          status.skipped();
          return emit([null, msg, null]);
        });
        // a closing gate waits for it: it still sends (or parks) the msg
        gate.track(expired);
        return expired;
      }
      msg.admission = conformingAdmission(msg.admission, (ceilings as CeilingInfos).of(held.meta?.ceiling ?? ""), { gate: GATE, now }, flushed ? now.getTime() : held.dueAt, undefined, releaseIdOf(held));
      meter.add();
      status.allowed();
      // the promise of its parking, should the gate be closing: the queue acks the held entry only once it is parked
      if (!gate.isClosing()) return emit([msg, null, null]);
      const whose: Whose = holderOf(held, service as CapService);
      if (held.expiresAt !== undefined) whose.expiresAt = held.expiresAt;
      return emit([msg, null, null], whose);
    }

    /** msg.reset drops the held msgs of the msg's ceiling (each out of skipped, reset); msg.flush releases them now. */
    async function control(msg: AdmittedMsg, svc: CapService, s: ThroughputSettings, holds: PacedHolds, reset: boolean, seq: number): Promise<void> {
      const read = reader.read(msg);
      const raw = read instanceof Promise ? await read : read;
      // a control msg is no send: only what names its ceiling is read (no recipient, tier or messageId asked for)
      const org = sendOrg(raw.org, svc.sendRules);
      const scope = await scopeOf(msg, s, () => readChannel(raw.channel, svc.sendRules));
      const label = ceilingLabel(org, scope);
      const reserved: number[] = [];
      const tag = holds.tagOf(ceilingKey(svc.settings.keyPrefix, org, scope));
      const each = async (held: DeferredMsg): Promise<void> => {
        if (!reset) {
          await release(held, true);
          return;
        }
        const heldMsg = held.msg as AdmittedMsg;
        heldMsg.admission = { ...resetAdmission(heldMsg.admission, label, { gate: GATE, now: new Date() }), release_id: releaseIdOf(held) };
        reserved.push(Number(held.meta?.reservedUs));
        await giveBackClaims({ RED, node }, heldMsg.admission, holderOf(held, svc));
        status.skipped();
        await emit([null, heldMsg, null]);
      };
      // the sends that came in before it are held first (a burst right before a reset is still being taken in), not those after it
      await Promise.allSettled([...admitting].flatMap(([s2, admitted]) => (s2 < seq ? [admitted] : [])));
      // this instance's own first (earliest instants), then those in the shared queue (handed back, or left by a process that died)
      const own = holds.take(tag, seq);
      await Promise.all(own.held.map((held) => each(held).catch((err: Error) => node.warn(`could not hand out held msg ${held.id}: ${err.message}`))));
      await own.acked();
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

    function tracked(seq: number, admitted: Promise<void>): Promise<void> {
      admitting.set(seq, admitted);
      return admitted.finally(() => admitting.delete(seq));
    }

    async function handle(msg: AdmittedMsg, turn: Turn, svc: CapService, s: ThroughputSettings): Promise<void> {
      const holds = paced as PacedHolds;
      const seq = ++arrivals;
      if (Object.hasOwn(msg, "reset") || Object.hasOwn(msg, "flush")) {
        await control(msg, svc, s, holds, Object.hasOwn(msg, "reset"), seq);
        return;
      }
      // held msgs due by now leave in turn with the incoming ones, not after the whole run of them;
      // not once the gate closes (a closing node's sends are dropped): the pacer hands those back
      if (!gate.isClosing()) holds.releaseDue();
      try {
        await tracked(seq, admit(msg, svc, s, holds, (out) => turn.send(out), (whose) => turn.lineUp(whose), seq));
      } finally {
        if (!gate.isClosing()) holds.releaseDue();
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
      if (expired || now - held.dueAt <= REPACE_AFTER_MS || !service || !settings || !paced) return release(held, false);
      // a copy: should the gate close before it leaves, the entry goes back to the queue as it was
      const msg = structuredClone(held.msg) as AdmittedMsg;
      const seq = ++arrivals;
      const repaced = tracked(seq, admit(msg, service, settings, paced, (out) => void gate.emit(out), () => undefined, seq, releaseIdOf(held)));
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
    async function admit(
      msg: AdmittedMsg, svc: CapService, s: ThroughputSettings, holds: PacedHolds, send: (out: Outputs) => void, lineUp: (whose: Whose) => void, seq: number, releaseIdKept?: string,
    ): Promise<void> {
      const read = reader.read(msg);
      const sendData: Send = parseSend(read instanceof Promise ? await read : read, svc.sendRules);
      lineUp(sendData);
      const scope = await scopeOf(msg, s, () => sendData.channel);
      const label = ceilingLabel(sendData.org, scope);
      const ceiling = (ceilings as CeilingInfos).of(label);
      // a msg is never held past its own expiresAt
      const untilExpiry = sendData.expiresAt === undefined ? Number.POSITIVE_INFINITY : Math.max(0, sendData.expiresAt - Date.now());
      const maxWaitMs = s.disposition === "skip" ? 0 : Math.min(s.maxWaitMs, untilExpiry);
      const outcome = await svc.throughput.reserve(sendData.org, sendData.channel, scope, s.limit, maxWaitMs);
      if (releaseIdKept !== undefined && holds.isStopped) throw new GateClosed();
      const now = new Date();
      const refuse = async (waitUs: number, bound: number | undefined): Promise<void> => {
        const refusal = withReleaseId(throughputAdmission(msg.admission, waitUs / 1000, ceiling, { gate: GATE, channel: sendData.channel, now }, bound), releaseIdKept);
        await prepareRefusal({ RED, node, gate: GATE, service: svc, status, httpResponse }, msg, refusal, sendData);
        send([null, msg, null]);
      };
      if (outcome instanceof StoreUnavailableError) {
        msg.admission = withReleaseId(conformingAdmission(msg.admission, ceiling, { gate: GATE, now }, undefined, failReason(outcome)), releaseIdKept);
        status.failOpen();
        send([msg, null, null]);
        return;
      }
      holds.clock.observe(outcome.nowUs / 1000);
      if (!outcome.allowed) return refuse(outcome.waitUs, s.disposition === "queue" ? maxWaitMs : undefined);
      // a closing gate whose next node has stopped (a full deploy) hands a msg due now back with its instant, as a held one
      if (outcome.waitUs === 0 && !gate.wouldPark(0)) {
        msg.admission = withReleaseId(conformingAdmission(msg.admission, ceiling, { gate: GATE, now }), releaseIdKept);
        meter.add();
        status.allowed();
        send([msg, null, null]);
        return;
      }
      // the reserved instant, by the store's clock (the queue releases by the same clock); rounded up: never early
      const reservedUs = outcome.nowUs + outcome.waitUs;
      const dueAt = Math.ceil(reservedUs / 1000);
      // a msg that will not use its instant gives it back, unless something was reserved after it
      const giveBackInstant = (): Promise<unknown> => svc.throughput.refund(sendData.org, scope, s.limit, { count: 1, lastUs: reservedUs }).catch(() => undefined);
      if (sendData.expiresAt !== undefined && preciseToWall(holds.clock.toLocal(dueAt)) > sendData.expiresAt) {
        // the wait was bounded from when the msg came in, the instant is the store's: a reservation that reached it late
        // can lie past the msg's expiresAt, where it would never leave. Given back, and skipped now as a wait too long
        await giveBackInstant();
        return refuse(outcome.waitUs, maxWaitMs);
      }
      await holds.hold({
        msg, label, ceilingKey: ceilingKey(svc.settings.keyPrefix, sendData.org, scope), reservedUs, dueAt, recipient: sendData.recipient, org: sendData.org, seq,
        ...(sendData.expiresAt !== undefined ? { expiresAt: sendData.expiresAt } : {}), ...(releaseIdKept !== undefined ? { releaseIdKept } : {}),
      }, giveBackInstant);
      gate.counts?.heldFor("throughput_exceeded");
    }

    // msgs handed back or left by a process that died fall due every few ms: wake every ms, and take again at once after a release
    gate.serve(handle, { release: fromQueue, releaseTiming: { minSleepMs: 1, steady: true }, cleanups: [() => paced?.stop()] });
  }

  RED.nodes.registerType(GATE, ThroughputGate);
}

