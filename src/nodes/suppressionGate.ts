import type { Node, NodeAPI, NodeDef } from "node-red";
import { suppressionAdmission } from "../core/admission";
import type { CapService } from "../core/capService";
import { parseSend } from "../core/send";
import { parseSuppressionEntry } from "../core/suppression/suppressionEntry";
import type { CapConfigNode } from "./capConfig";
import { gateMetrics, releaseHeldMsgs, parkingFor, serveGate, type Turn } from "./gateNode";
import { GateStatus } from "./gateStatus";
import { runtimeMessages } from "./i18n";
import { prepareRefusal, type AdmittedMsg } from "./refusal";
import { SEND_FIELDS, SendReader, type FieldProps } from "./sendReader";

const GATE = "suppression-gate";
const CONTROL_TOPICS = ["suppress", "unsuppress"];

export type SuppressionGateDef = NodeDef & FieldProps & {
  config?: string;
  duplicateWindow?: number | string;
  httpResponse?: boolean | string;
};


function windowSeconds(value: unknown): number | Error {
  if (value === undefined || value === "") return 86400;
  const n = Number(value);
  return Number.isInteger(n) && n >= 0 ? n : new Error(`duplicateWindow: must be whole seconds >= 0 (0 = off), got ${JSON.stringify(value)}`);
}

export default function register(RED: NodeAPI): void {
  function SuppressionGate(this: Node, def: SuppressionGateDef): void {
    RED.nodes.createNode(this, def);
    const node = this;
    const config = RED.nodes.getNode(def.config ?? "") as CapConfigNode | null;
    const httpResponse = def.httpResponse === true || def.httpResponse === "true";
    const duplicateWindow = windowSeconds(def.duplicateWindow);
    const reader = new SendReader(RED, node, def, SEND_FIELDS);
    const status = new GateStatus(node, config?.service?.store.kind ?? "store", runtimeMessages(RED));
    const metrics = gateMetrics(config?.service, node.id, GATE);

    const problem = !config
      ? new Error("config: no cap-config selected")
      : config.problem ?? (duplicateWindow instanceof Error ? duplicateWindow : undefined);
    if (problem) {
      // a cap-config's own problem is already logged by it; a gate logs its own
      if (problem !== config?.problem) node.error(problem.message);
      status.broken(problem);
    }
    const unsubscribe = config?.service ? status.watch(config.service) : undefined;
    // it holds nothing, but what it judges as it closes is parked in its queue and let out by its next deployment
    const stopReleasing = config?.service && !problem ? releaseHeldMsgs(RED, config.service, node, GATE, status) : [];

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

    async function admit(msg: AdmittedMsg, turn: Turn, service: CapService): Promise<void> {
      const read = reader.read(msg);
      const raw = read instanceof Promise ? await read : read;
      const sendData = parseSend(raw, service.sendRules);
      turn.lineUp(sendData);
      const decision = await service.suppression.check(sendData, raw.body, duplicateWindow as number);
      const admission = suppressionAdmission(decision, msg.admission, {
        gate: GATE, configId: (config as CapConfigNode).id, storeKind: service.store.kind, channel: sendData.channel, now: new Date(),
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

    // not async: it hands back the promise of the work it starts, with no promise of its own around it
    function handle(msg: AdmittedMsg, turn: Turn): Promise<void> {
      const service = config?.service;
      if (problem || !service) return Promise.reject(problem ?? new Error("cap-config: its store is closed"));
      if (typeof msg.topic === "string" && CONTROL_TOPICS.includes(msg.topic)) return control(msg, service);
      return admit(msg, turn, service);
    }

    serveGate(node, status, handle, [unsubscribe, ...stopReleasing], {
      metrics, backlog: config?.service?.access.queue, drains: config?.service,
      ...parkingFor(RED, node, config?.service, problem),
    });
  }

  RED.nodes.registerType(GATE, SuppressionGate);
}
