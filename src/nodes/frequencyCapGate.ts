import type { Node, NodeAPI, NodeDef, NodeMessage, NodeMessageInFlow } from "node-red";
import { capAdmission, httpRefusal, type Admission } from "../core/admission";
import { parseSend } from "../core/send";
import type { CapConfigNode } from "./capConfig";
import { GateStatus } from "./gateStatus";
import { SendReader, type FieldProps } from "./sendReader";

const GATE = "frequency-cap-gate";
const MODES = ["claim"] as const;

export type FrequencyCapGateDef = NodeDef & FieldProps & {
  config?: string;
  mode?: string;
  deferMax?: number | string;
  httpResponse?: boolean | string;
};

type Send = (msg: NodeMessage | (NodeMessage | null)[]) => void;
type Done = (err?: Error) => void;
type AdmittedMsg = NodeMessageInFlow & { admission?: Admission; statusCode?: number; headers?: Record<string, string> };

export default function register(RED: NodeAPI): void {
  function FrequencyCapGate(this: Node, def: FrequencyCapGateDef): void {
    RED.nodes.createNode(this, def);
    const node = this;
    const config = RED.nodes.getNode(def.config ?? "") as CapConfigNode | null;
    const mode = def.mode || "claim";
    const httpResponse = def.httpResponse === true || def.httpResponse === "true";
    const reader = new SendReader(RED, node, def);
    const status = new GateStatus(node, config?.service?.store.kind ?? "store");

    const problem = !config
      ? new Error("config: no cap-config selected")
      : config.problem ?? (!(MODES as readonly string[]).includes(mode)
        ? new Error(`mode: "${mode}" is not available in this version (available: ${MODES.join(", ")})`)
        : undefined);
    if (problem) status.broken(problem.message.slice(0, 80));

    const unsubscribe = config?.service?.store.onStateChange((state) => status.storeState(state));
    if (config?.service) status.storeState(config.service.store.state());

    async function admit(msg: AdmittedMsg, send: Send): Promise<void> {
      const service = config?.service;
      if (problem || !service) throw problem ?? new Error("cap-config: its store is closed");
      const sendData = parseSend(await reader.read(msg), service.sendRules);
      const decision = await service.engine.claim(sendData);
      const admission = capAdmission(decision, msg.admission, {
        gate: GATE, configId: config.id, storeKind: service.store.kind, channel: sendData.channel, now: new Date(),
      });
      msg.admission = admission;
      if (admission.status === "allowed") {
        if (decision.kind === "fail_open") status.failOpen();
        else status.allowed();
        send([msg, null, null]);
        return;
      }
      status.skipped();
      if (httpResponse) {
        const reply = httpRefusal(admission);
        msg.statusCode = reply.statusCode;
        msg.headers = { ...(msg.headers ?? {}), ...reply.headers };
        msg.payload = reply.payload;
      }
      send([null, msg, null]);
    }

    node.on("input", (msg: NodeMessageInFlow, send: Send, done: Done) => {
      admit(msg as AdmittedMsg, send).then(
        () => done(),
        (err: Error) => {
          status.error(err.message.slice(0, 60));
          done(err);
        },
      );
    });

    node.on("close", () => {
      unsubscribe?.();
      status.stop();
    });
  }

  RED.nodes.registerType(GATE, FrequencyCapGate);
}
