import { ORG, type Scenario } from "../scenarios";

export interface GateFlow {
  gateId: string;
  configId: string;
  /** the flow JSON, as the editor would deploy it */
  nodes: object[];
}

export interface GateFlowOptions {
  keyPrefix: string;
  redisUrl: string;
  /** cap-config `timeoutMs`: high, so a slow claim waits instead of failing open; absent, the default (50) */
  timeoutMs?: number;
  /** where a postgres scenario's cap-config reads its rules (`pgUrl`, `pgTable` as `schema.table`) */
  pg?: { url: string; table: string };
  /** cap-config `historySize`: absent, the default */
  historySize?: number;
}

/** One tab: a cap-config and a frequency-cap-gate whose three outputs go nowhere. */
export function gateFlow(scenario: Scenario, tag: string, options: GateFlowOptions): GateFlow {
  const tabId = `bench-tab-${tag}`;
  const configId = `bench-cfg-${tag}`;
  const gateId = `bench-gate-${tag}`;
  return {
    gateId,
    configId,
    nodes: [
      { id: tabId, type: "tab", label: `bench ${scenario.name}` },
      {
        id: configId,
        type: "cap-config",
        name: scenario.name,
        store: scenario.store,
        redisUrl: options.redisUrl,
        keyPrefix: options.keyPrefix,
        defaultOrg: ORG,
        ...(scenario.rulesSource === "postgres"
          ? { rulesSource: "postgres", rules: [], pgUrl: pgOf(scenario, options).url, pgTable: pgOf(scenario, options).table }
          : { rulesSource: "inline", rules: scenario.rules }),
        failMode: "open",
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        ...(options.historySize !== undefined ? { historySize: options.historySize } : {}),
      },
      {
        id: gateId,
        type: "frequency-cap-gate",
        z: tabId,
        name: scenario.name,
        config: configId,
        mode: "claim",
        x: 200,
        y: 100,
        wires: [[], [], []],
      },
    ],
  };
}

function pgOf(scenario: Scenario, options: GateFlowOptions): { url: string; table: string } {
  if (!options.pg) throw new Error(`${scenario.name}: a postgres scenario needs a pgUrl and pgTable`);
  return options.pg;
}
