import type { Node } from "node-red";
import { Collector, flowNode, helper, TAB, gateNodes } from "./nodeRed";
import { REDIS_URL } from "./redis";
import type { SuiteStore } from "./suiteStore";

export interface ChainOptions {
  /** a SuiteStore puts both cap-configs on its store (a Redis Cluster's seeds included) */
  store: "memory" | "redis" | SuiteStore;
  keyPrefix: string;
  /** rules of the main cap-config (cfgA) */
  rules: object[];
  /** rules of a second cap-config (cfgB) for a later gate that refuses */
  laterRules?: object[];
  duplicateWindow?: number;
  config?: Record<string, unknown>;
}

/**
 * suppression-gate (sup) → frequency-cap-gate (capA) → frequency-cap-gate (capB, own config)
 * → helper `sent`; every skipped output to `skipped`, a release-mode gate (`release`) to
 * `released`, Catch to `caught`.
 */
export async function deployChain(options: ChainOptions): Promise<{ out: Collector; node(id: string): Node }> {
  const config = (id: string, rules: object[]) => ({
    id, type: "cap-config", ...storeFields(options.store), keyPrefix: options.keyPrefix, rules, ...options.config,
  });
  const flow = [
    TAB,
    config("cfgA", options.rules),
    config("cfgB", options.laterRules ?? []),
    flowNode({ id: "sup", type: "suppression-gate", config: "cfgA", duplicateWindow: options.duplicateWindow ?? 86400, wires: [["capA"], ["skipped"]] }),
    flowNode({ id: "capA", type: "frequency-cap-gate", config: "cfgA", wires: [["capB"], ["skipped"], []] }),
    flowNode({ id: "capB", type: "frequency-cap-gate", config: "cfgB", wires: [["sent"], ["skipped"], []] }),
    flowNode({ id: "release", type: "frequency-cap-gate", config: "cfgA", mode: "release", wires: [["released"], [], []] }),
    flowNode({ id: "sent", type: "helper" }),
    flowNode({ id: "skipped", type: "helper" }),
    flowNode({ id: "released", type: "helper" }),
    flowNode({ id: "catch", type: "catch", scope: null, wires: [["caught"]] }),
    flowNode({ id: "caught", type: "helper" }),
  ];
  await helper.load(gateNodes, flow);
  return { out: new Collector(["sent", "skipped", "released", "caught"]), node: (id) => helper.getNode(id) as Node };
}

/** Sends one msg into node `id` and waits until `count` more msgs reached the collector. */
export async function push(chain: { out: Collector; node(id: string): Node }, id: string, msg: Record<string, unknown>, count = 1): Promise<void> {
  const before = chain.out.total();
  chain.node(id).receive(msg);
  await chain.out.until(before + count);
}

/** cap-config fields that put it on `store` */
export function storeFields(store: "memory" | "redis" | SuiteStore): Record<string, unknown> {
  return typeof store === "string" ? { store, redisUrl: REDIS_URL } : store.config();
}
