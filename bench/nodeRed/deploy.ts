import type { Node } from "node-red";
import type { CapConfigNode } from "../../src/nodes/gate/capConfigNode";
import type { EmbeddedRed } from "./embeddedRed";
import type { GateFlow } from "./gateFlow";
import { nextFlowsStarted } from "./host";

export interface DeployedGate {
  gate: Node;
  config: CapConfigNode;
}

const START_MS = 10_000;
const STORE_READY_MS = 5_000;

/** Full deploy of `flow` (replacing whatever ran), then waits until its gate runs and its store is ready. */
export async function deployGate(red: EmbeddedRed, flow: GateFlow): Promise<DeployedGate> {
  const started = nextFlowsStarted(
    red,
    (event) => (event.config.flows ?? []).some((n) => n.id === flow.gateId),
    START_MS,
  );
  await red.runtime.flows.setFlows({ flows: { flows: flow.nodes }, deploymentType: "full" });
  await started;

  const gate = red.nodes.getNode(flow.gateId);
  const config = red.nodes.getNode<CapConfigNode>(flow.configId);
  if (!gate || !config) throw new Error(`deployed flow has no ${gate ? "cap-config" : "gate"} node`);
  if (!config.service) throw new Error(`cap-config did not start: ${config.problem?.message ?? "no service"}`);
  await storeReady(config, STORE_READY_MS);
  return { gate, config };
}

function storeReady(config: CapConfigNode, timeoutMs: number): Promise<void> {
  const store = config.service?.store;
  if (!store) return Promise.reject(new Error("cap-config has no store"));
  if (store.state() === "ready") return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`${store.kind} store not ready after ${timeoutMs} ms (state ${store.state()})`));
    }, timeoutMs);
    const off = store.onStateChange((state) => {
      if (state !== "ready") return;
      clearTimeout(timer);
      off();
      resolve();
    });
  });
}
