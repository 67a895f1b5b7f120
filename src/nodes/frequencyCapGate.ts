import type { Node, NodeAPI, NodeDef } from "node-red";
import { allowedAdmission, capAdmission, carried, failReason, isoAt, type Admission, type CapGateContext } from "../core/admission";
import type { CapDecision } from "../core/caps/decisions";
import { parseCandidates } from "../core/caps/candidates";
import { checkAnswer } from "../core/caps/checkAnswer";
import { HeldOrder } from "../core/hold/heldOrder";
import { ownValue } from "../core/ownKeys";
import { claimHolder, parseSend, type Send } from "../core/send";
import { SettingError, StoreUnavailableError } from "../core/errors";
import type { CapService } from "../core/capService";
import type { CapConfigNode } from "./gate/capConfigNode";
import { Gate, type Turn } from "./gate/gate";
import { httpResponseSetting } from "./gate/settings";
import { numberSetting } from "../core/gateSettings";
import type { Translate } from "../core/schema/messages";
import { runtimeMessages } from "./gate/i18n";
import { prepareRefusal, type AdmittedMsg } from "./gate/refusal";
import { holdOrExpire } from "./gate/holding";
import { collapseKeyOf } from "../core/hold/heldIds";
import { refundClaims } from "./gate/refunds";
import { SendReader, type FieldProps, type RawGateInput } from "./gate/sendReader";
import { ClaimVerdict } from "./gate/claimVerdict";

const GATE = "frequency-cap-gate";
const MODES = ["claim", "check", "record", "release"] as const;
type Mode = (typeof MODES)[number];

export type FrequencyCapGateDef = NodeDef & FieldProps & {
  config?: string;
  mode?: string;
  deferMax?: number | string;
  /** seconds of spread for msgs held until a calendar period resets */
  jitter?: number | string;
  httpResponse?: boolean | string;
};

interface CapGateSettings {
  mode: Mode;
  deferMaxMs: number;
  jitterMs: number;
}

/** The gate's own settings, checked at deploy; a bad one names its property. */
function settingsOf(def: FrequencyCapGateDef, t: Translate): CapGateSettings {
  const mode = (def.mode || "claim") as Mode;
  if (!(MODES as readonly string[]).includes(mode)) throw new SettingError("mode", `mode: "${mode}" is not available in this version (available: ${MODES.join(", ")})`);
  return { mode, deferMaxMs: numberSetting(GATE, "deferMax", def.deferMax, t) * 1000, jitterMs: numberSetting(GATE, "jitter", def.jitter, t) * 1000 };
}

export default function register(RED: NodeAPI): void {
  function FrequencyCapGate(this: Node, def: FrequencyCapGateDef): void {
    RED.nodes.createNode(this, def);
    const heldOrder = new HeldOrder();
    const node = this;
    const httpResponse = httpResponseSetting(def.httpResponse);
    const reader = new SendReader(RED, node, def);
    // only a claim is a verdict that goes stale: a record, a release or a check reports what has happened
    const gate = new Gate(RED, node, def.config, { type: GATE, needsConfig: "its store keeps the counters", settings: () => settingsOf(def, runtimeMessages(RED)), lasts: (def.mode || "claim") !== "claim" });
    const { status, config } = gate;
    const metrics = gate.counts;

    /** The msg's send, at once when its fields are msg paths (no extra turn of the event loop). */
    function readSend(msg: AdmittedMsg, service: CapService, turn: Turn): Send | Promise<Send> {
      // parsed at once: the reader's one raw send will do
      const now = reader.readAtOnce(msg);
      if (now) return linedUp(now, service, turn);
      const raw = reader.read(msg);
      if (raw instanceof Promise) return raw.then((later) => linedUp(later, service, turn));
      return linedUp(raw, service, turn);
    }

    function linedUp(raw: RawGateInput, service: CapService, turn: Turn): Send {
      const sendData = parseSend(raw, service.sendRules);
      turn.lineUp(sendData);
      return sendData;
    }

    /** Ends the msg's turn itself (ClaimVerdict) when its send is read at once; else (a context store, JSONata) the promise of its claim. */
    function claim(msg: AdmittedMsg, turn: Turn, service: CapService): Promise<void> | undefined {
      let read: Send | Promise<Send>;
      try {
        read = readSend(msg, service, turn);
      } catch (err) {
        // a bad field: the msg goes to Catch
        return Promise.reject(err);
      }
      if (read instanceof Promise) return read.then((sendData) => claimFor(msg, turn, service, sendData));
      const stamp = turn.historyStamp();
      if (stamp !== undefined) read.historyStamp = stamp;
      service.engine.claimTo(read, new ClaimVerdict(decided, msg, turn, service, read));
      return undefined;
    }

    function claimFor(msg: AdmittedMsg, turn: Turn, service: CapService, sendData: Send): Promise<void> {
      const stamp = turn.historyStamp();
      if (stamp !== undefined) sendData.historyStamp = stamp;
      return service.engine.claim(sendData).then((decision) => decided(msg, turn, service, sendData, decision));
    }

    /** What a claim's verdict writes on the msg (once per msg, synchronously): the gate's, its channel and time set for it. */
    const admissionContext: CapGateContext = { gate: GATE, configId: config?.id ?? "", storeKind: "", channel: "", now: new Date(0) };

    function decided(msg: AdmittedMsg, turn: Turn, service: CapService, sendData: Send, decision: CapDecision): Promise<void> | undefined {
      admissionContext.storeKind = service.store.kind;
      admissionContext.channel = sendData.channel;
      admissionContext.now.setTime(Date.now());
      const admission = capAdmission(decision, msg.admission, admissionContext);
      if (admission.status !== "allowed") return refuse(msg, turn, service, sendData, decision, admission);
      msg.admission = admission;
      if (decision.kind === "allowed" && decision.historyKept) turn.historyKept();
      if (decision.kind === "fail_open") status.failOpen();
      else status.allowed();
      if (decision.kind === "allowed" && admission.shadow) countShadowRefusals(decision);
      turn.send([msg, null, null]);
      return undefined;
    }

    function countShadowRefusals(decision: Extract<CapDecision, { kind: "allowed" }>): void {
      decision.outcome.counters.forEach((counter, i) => {
        const rule = decision.caps[i]?.rule;
        if (counter.wouldRefuse && rule) metrics?.wouldRefuse(rule.id, rule.org);
      });
    }

    async function refuse(msg: AdmittedMsg, turn: Turn, service: CapService, sendData: Send, decision: CapDecision, admission: Admission): Promise<void> {
      const refusal = { RED, node, gate: GATE, service, status, httpResponse };
      if (decision.kind === "capped" && (admission.disposition === "defer" || admission.disposition === "collapse")) {
        const binding = decision.blocking[0];
        const calendar = binding !== undefined && binding.rule.window_type !== "rolling";
        const dueAt = decision.retryAfterMs === null ? null : Date.now() + decision.retryAfterMs;
        const topic = ownValue(sendData.attributes, "topic") ?? (typeof msg.topic === "string" ? msg.topic : "");
        // the recipient as the store keys it: with hashRecipients no address reaches the queue
        const collapseKey = admission.disposition === "collapse"
          ? collapseKeyOf(node.id, sendData.org, service.recipientToken(sendData.recipient), topic)
          : undefined;
        const { deferMaxMs, jitterMs } = gate.settings as CapGateSettings;
        await holdOrExpire({ ...refusal, configId: (config as CapConfigNode).id, deferMaxMs, jitterMs: calendar ? jitterMs : 0, order: heldOrder }, msg, admission, sendData, dueAt,
          turn, collapseKey);
        return;
      }
      await prepareRefusal(refusal, msg, admission, sendData);
      turn.send([null, msg, null]);
    }

    async function record(msg: AdmittedMsg, turn: Turn, service: CapService): Promise<void> {
      const read = readSend(msg, service, turn);
      const sendData = read instanceof Promise ? await read : read;
      const result = await service.engine.record(sendData);
      const { claims, trail } = carried(msg.admission);
      const at = isoAt(new Date());
      // not recorded (the store failed, or the send queue was full): the msg goes on, and says why
      const unrecorded = result instanceof StoreUnavailableError ? failReason(result) : undefined;
      if (unrecorded) {
        status.failOpen();
        status.recorded();
        trail.push({ gate: GATE, status: "recorded", reason: unrecorded, at });
      } else {
        status.recorded();
        trail.push({ gate: GATE, status: "recorded", ...(result === "exempt" ? { reason: "exempt" as const } : {}), at });
      }
      const reason = unrecorded && !msg.admission?.reason ? { reason: unrecorded } : {};
      msg.admission = msg.admission ? { ...msg.admission, claims, trail, ...reason } : { status: "allowed", gate: GATE, claims, trail, ...reason };
      turn.send([msg, null, null]);
    }

    /** check mode: eligibility of each candidate (or of the send), read in one store call; claims nothing, refuses nothing. */
    async function check(msg: AdmittedMsg, turn: Turn, service: CapService): Promise<void> {
      const candidates = parseCandidates((msg as { candidates?: unknown }).candidates);
      const sendData = await readSend(msg, service, turn);
      const decision = await service.engine.check(sendData, candidates);
      const answer = checkAnswer(candidates, decision.kind === "checked" ? decision.verdicts : undefined);
      // set one by one: Object.assign takes its slow, generic path for a msg
      const out = msg as { eligible?: unknown; remaining?: unknown; blocked?: unknown };
      out.eligible = answer.eligible;
      out.remaining = answer.remaining;
      if ("blocked" in answer) out.blocked = answer.blocked;
      else delete out.blocked;
      const reason = decision.kind === "exempt" ? "exempt" : decision.kind === "fail_open" ? failReason(decision.error) : undefined;
      msg.admission = allowedAdmission(msg.admission, { gate: GATE, now: new Date() }, reason);
      if (decision.kind === "fail_open") status.failOpen();
      else status.allowed();
      turn.send([msg, null, null]);
    }

    async function release(msg: AdmittedMsg, turn: Turn, service: CapService): Promise<void> {
      const { claims, trail } = carried(msg.admission);
      const raw = reader.read(msg);
      const holder = claimHolder(raw instanceof Promise ? await raw : raw, service.sendRules);
      turn.lineUp(holder);
      const { refunded, kept } = await refundClaims(RED, node, claims, holder);
      trail.push({ gate: GATE, status: "released", refunded, at: new Date().toISOString() });
      msg.admission = { ...(msg.admission ?? { status: "allowed", gate: GATE }), claims: kept, trail };
      status.released();
      turn.send([msg, null, null]);
    }

    // not async: it hands back the promise of the mode's work, with no promise of its own around it, or nothing when
    // the work ends the msg's turn itself (a claim)
    gate.serve((msg, turn, service, settings) => {
      if (settings.mode === "record") return record(msg, turn, service);
      if (settings.mode === "check") return check(msg, turn, service);
      if (settings.mode === "release") return release(msg, turn, service);
      return claim(msg, turn, service);
    }, { noVerdicts: gate.settings?.mode === "check" });
  }

  RED.nodes.registerType(GATE, FrequencyCapGate);
}
