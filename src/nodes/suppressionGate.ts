import type { Node, NodeAPI, NodeDef } from "node-red";
import { suppressionAdmission } from "../core/admission";
import type { CapService } from "../core/capService";
import { parseSend } from "../core/send";
import { parseSuppressionEntry } from "../core/suppression/suppressionEntry";
import type { CapConfigNode } from "./gate/capConfigNode";
import { Gate, type Turn } from "./gate/gate";
import { httpResponseSetting } from "./gate/settings";
import { numberSetting } from "../core/gateSettings";
import { runtimeMessages } from "./gate/i18n";
import { prepareRefusal, type AdmittedMsg } from "./gate/refusal";
import { SEND_FIELDS, SendReader, type FieldProps } from "./gate/sendReader";

const GATE = "suppression-gate";
const CONTROL_TOPICS = ["suppress", "unsuppress"];

export type SuppressionGateDef = NodeDef & FieldProps & {
  config?: string;
  duplicateWindow?: number | string;
  httpResponse?: boolean | string;
};



export default function register(RED: NodeAPI): void {
  function SuppressionGate(this: Node, def: SuppressionGateDef): void {
    RED.nodes.createNode(this, def);
    const node = this;
    const httpResponse = httpResponseSetting(def.httpResponse);
    const reader = new SendReader(RED, node, def, SEND_FIELDS);
    // it holds nothing, but what it judges as it closes is parked in its queue and let out by its next deployment
    const gate = new Gate(RED, node, def.config, { type: GATE, needsConfig: "its store keeps the block list", settings: () => numberSetting(GATE, "duplicateWindow", def.duplicateWindow, runtimeMessages(RED)) });
    const { status } = gate;

    /** A control msg changes the block list and goes no further: it is not a send. */
    async function control(msg: AdmittedMsg, service: CapService): Promise<void> {
      const read = reader.read(msg);
      const raw = read instanceof Promise ? await read : read;
      const entry = parseSuppressionEntry({
        recipient: raw.recipient, channel: raw.channel, org: raw.org, reason: (msg as { reason?: unknown }).reason,
      }, service.sendRules, new Date());
      if (msg.topic === "suppress") await service.suppression.suppress([entry]);
      else await service.suppression.unsuppress([entry]);
      status.listChanged();
    }

    async function admit(msg: AdmittedMsg, turn: Turn, service: CapService, duplicateWindow: number): Promise<void> {
      const read = reader.read(msg);
      const raw = read instanceof Promise ? await read : read;
      const sendData = parseSend(raw, service.sendRules);
      turn.lineUp(sendData);
      const decision = await service.suppression.check(sendData, raw.body, duplicateWindow);
      const admission = suppressionAdmission(decision, msg.admission, {
        gate: GATE, configId: (gate.config as CapConfigNode).id, storeKind: service.store.kind, channel: sendData.channel, now: new Date(),
      });
      if (admission.status === "allowed") {
        msg.admission = admission;
        if (decision.kind === "fail_open") status.failOpen();
        else status.allowed();
        turn.send([msg, null]);
        return;
      }
      await prepareRefusal({ RED, node, gate: GATE, service, status, httpResponse }, msg, admission, sendData);
      turn.send([null, msg]);
    }

    gate.serve((msg, turn, service, duplicateWindow) => {
      if (typeof msg.topic === "string" && CONTROL_TOPICS.includes(msg.topic)) return control(msg, service);
      return admit(msg, turn, service, duplicateWindow);
    });
  }

  RED.nodes.registerType(GATE, SuppressionGate);
}
