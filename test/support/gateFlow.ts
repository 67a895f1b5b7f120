import { Collector, flowNode, helper, TAB, gateNodes } from "./nodeRed";
import { storeFields } from "./chainFlow";
import type { SuiteStore } from "./suiteStore";
import type { Node } from "node-red";

export interface GateFlowOptions {
  rules: object[];
  store?: "memory" | "redis" | SuiteStore;
  config?: Record<string, unknown>;
  gate?: Record<string, unknown>;
  credentials?: Record<string, string>;
  /** more gates, each on its own cap-config with the same settings (two instances on one Redis) */
  instances?: number;
}

export interface GateFlow {
  gates: Node[];
  gate: Node;
  out: Collector;
  /** sends one msg into gate `index` */
  send(msg: Record<string, unknown>, index?: number): void;
}

/**
 * Deploys cap-config(s) + frequency-cap-gate(s) whose outputs go to helper
 * nodes `allowed`, `skipped`, `deferred`, with a Catch node feeding `caught`.
 */
export async function deployGateFlow(options: GateFlowOptions): Promise<GateFlow> {
  const instances = options.instances ?? 1;
  const flow: object[] = [TAB];
  const credentials: Record<string, object> = {};
  for (let i = 0; i < instances; i++) {
    flow.push({
      id: `cfg${i}`, type: "cap-config", name: `caps ${i}`, ...storeFields(options.store ?? "memory"),
      rules: options.rules, ...options.config,
    });
    if (options.credentials) credentials[`cfg${i}`] = options.credentials;
    flow.push(flowNode({
      id: `gate${i}`, type: "frequency-cap-gate", config: `cfg${i}`, ...options.gate,
      wires: [["allowed"], ["skipped"], ["deferred"]],
    }));
  }
  flow.push(
    flowNode({ id: "allowed", type: "helper" }),
    flowNode({ id: "skipped", type: "helper" }),
    flowNode({ id: "deferred", type: "helper" }),
    flowNode({ id: "catch", type: "catch", scope: null, wires: [["caught"]] }),
    flowNode({ id: "caught", type: "helper" }),
  );
  await helper.load(gateNodes, flow, credentials);
  const gates = Array.from({ length: instances }, (_, i) => helper.getNode(`gate${i}`) as Node);
  const out = new Collector(["allowed", "skipped", "deferred", "caught"]);
  return {
    gates,
    gate: gates[0],
    out,
    send: (msg, index = 0) => gates[index].receive(msg),
  };
}

/** Sends msgs one after another, each after the previous one left the gate. */
export async function sendInOrder(flow: GateFlow, msgs: Record<string, unknown>[]): Promise<void> {
  for (const msg of msgs) {
    const before = flow.out.total();
    flow.send(msg);
    await flow.out.until(before + 1);
  }
}
