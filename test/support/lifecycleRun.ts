import assert from "node:assert/strict";
import type { Node } from "node-red";
import type { CapConfigNode } from "../../src/nodes/gate/capConfigNode";
import type { CapService } from "../../src/core/capService";
import quietHoursGate from "../../src/nodes/quietHoursGate";
import throughputGate from "../../src/nodes/throughputGate";
import { Collector, flowNode, gateNodes, helper, redeploy, TAB, type Msg } from "./nodeRed";
import { reasonOfMsg, type GateCase, type Outcome } from "./gateCases";
import { sleep } from "./redis";
import { OwnRedis, OwnRedisCluster } from "./redisServer";

export type LifecycleStoreKind = "memory" | "redis" | "redis-cluster";

const NODES = [...gateNodes, quietHoursGate, throughputGate];
const OUTPUTS = ["allowed", "skipped", "deferred", "caught"] as const;
const STORE_TIMEOUT_MS = 2_000;

/**
 * The store a lifecycle suite runs on: the embedded one, or a Redis / a
 * 3-master Redis Cluster of the suite's own, with an append-only file written
 * at every command, so it can be killed and started again holding what it held.
 */
export class LifecycleStore {
  readonly redis: OwnRedis | undefined;
  readonly cluster: OwnRedisCluster | undefined;

  constructor(readonly kind: LifecycleStoreKind) {
    const durable = ["--appendonly", "yes", "--appendfsync", "always"];
    this.redis = kind === "redis" ? new OwnRedis(0, durable) : undefined;
    this.cluster = kind === "redis-cluster" ? new OwnRedisCluster(3, 0, durable) : undefined;
  }

  async start(): Promise<void> {
    await this.redis?.start();
    await this.cluster?.start();
  }

  async stop(): Promise<void> {
    await this.redis?.stop();
    this.redis?.cleanUp();
    await this.cluster?.stop();
  }

  /** kill -9 of every server of the store */
  async kill(): Promise<void> {
    await this.redis?.stop();
    await this.cluster?.kill();
  }

  /** the killed servers started again, with what their append-only files kept */
  async restart(): Promise<void> {
    await this.redis?.start();
    await this.cluster?.revive();
  }

  /**
   * cap-config fields that put it on this store, with every other setting at
   * its default but the call timeout: the default 50 ms is a latency budget a
   * loaded 2-core box can miss, and a call it cuts fails open, which would
   * pass for a verdict the lifecycle lost. A store that is down still fails at once.
   */
  config(): Record<string, unknown> {
    if (this.redis) return { store: "redis", redisUrl: this.redis.url, timeoutMs: STORE_TIMEOUT_MS };
    if (this.cluster) return { store: "redis-cluster", redisNodes: this.cluster.seeds, timeoutMs: STORE_TIMEOUT_MS };
    return { store: "memory" };
  }
}

/** One deployment of a case's flow: the cap-config `cfg`, the gate `gate`, helper nodes per output and a Catch. */
export interface Deployed {
  out: Collector;
  service: CapService | undefined;
  send(msg: Record<string, unknown>): void;
}

export interface CaseFlowOptions {
  keyPrefix: string;
  /** a name given to the gate and to the helpers after its allowed and deferred outputs (a modified-nodes deploy changes it) */
  edition?: string;
}

export function caseFlow(gateCase: GateCase, store: LifecycleStore, props: Record<string, unknown>, options: CaseFlowOptions): object[] {
  const edition = options.edition ?? "a";
  const wires = gateCase.type === "suppression-gate" ? [["allowed"], ["skipped"]] : [["allowed"], ["skipped"], ["deferred"]];
  return [
    TAB,
    { id: "cfg", type: "cap-config", name: "lifecycle", ...store.config(), keyPrefix: options.keyPrefix, rules: gateCase.rules ?? [] },
    flowNode({ id: "gate", type: gateCase.type, config: "cfg", name: `gate ${edition}`, ...props, wires }),
    flowNode({ id: "allowed", type: "helper", name: `allowed ${edition}` }),
    flowNode({ id: "skipped", type: "helper" }),
    flowNode({ id: "deferred", type: "helper", name: `deferred ${edition}` }),
    flowNode({ id: "catch", type: "catch", scope: null, wires: [["caught"]] }),
    flowNode({ id: "caught", type: "helper" }),
  ];
}

function deployed(): Deployed {
  const out = new Collector([...OUTPUTS]);
  const service = (helper.getNode("cfg") as unknown as CapConfigNode | null)?.service;
  return { out, service, send: (msg) => (helper.getNode("gate") as Node | null)?.receive(msg) };
}

export async function deployCase(gateCase: GateCase, store: LifecycleStore, props: Record<string, unknown>, options: CaseFlowOptions): Promise<Deployed> {
  await helper.load(NODES, caseFlow(gateCase, store, props, options));
  return deployed();
}

/** Everything the runs' collectors saw, each msg once by its messageId; a msg seen twice fails at once. */
export class Tally {
  readonly collectors: Collector[] = [];
  storeFailed = false;

  constructor(readonly gateCase: GateCase) {}

  add(collector: Collector): void {
    this.collectors.push(collector);
  }

  /** messageId → output; throws naming the first msgs that left twice */
  leftBy(): { leftBy: Map<string, string>; msgs: Map<string, Msg>; twice: string[] } {
    const leftBy = new Map<string, string>();
    const msgs = new Map<string, Msg>();
    const twice: string[] = [];
    for (const collector of this.collectors) {
      for (const { id, msg } of collector.sequence) {
        const messageId = String(msg.messageId);
        if (leftBy.has(messageId)) twice.push(`${messageId} (${leftBy.get(messageId)}, then ${id})`);
        leftBy.set(messageId, id);
        msgs.set(messageId, msg);
      }
    }
    return { leftBy, msgs, twice };
  }
}

/** How many msgs the gate's queue holds now. */
export async function heldNow(service: CapService | undefined): Promise<number> {
  if (!service) return 0;
  try {
    return await service.deferrals.queueOf("gate").size();
  } catch {
    return -1;
  }
}

/**
 * Waits until every one of `sent` msgs has left once or is held (and that has
 * not changed for a while), then checks it: 0 lost, 0 twice, and the case's
 * own verdicts when the store did not fail. Held msgs must be in the queue of
 * the last deployment's gate.
 */
export async function settle(tally: Tally, sent: number, last: Deployed, timeoutMs = 30_000): Promise<Outcome> {
  const started = Date.now();
  let stableSince = Date.now();
  let before = "";
  for (;;) {
    const { leftBy } = tally.leftBy();
    const held = tally.gateCase.holds ? await heldNow(last.service) : 0;
    const now = `${leftBy.size}/${held}`;
    if (now !== before) {
      before = now;
      stableSince = Date.now();
    }
    const complete = leftBy.size + held >= sent;
    // a complete count must hold for a moment (a msg could yet leave twice); an incomplete one is waited for
    if (complete && Date.now() - stableSince > 500) break;
    if (Date.now() - started > timeoutMs) break;
    await sleep(50);
  }
  const { leftBy, msgs, twice } = tally.leftBy();
  const held = tally.gateCase.holds ? await heldNow(last.service) : 0;
  assert.deepEqual(twice.slice(0, 5), [], `${twice.length} msg(s) left twice`);
  const missing: string[] = [];
  for (let i = 0; i < sent && missing.length < 5; i++) if (!leftBy.has(`m${i}`)) missing.push(`m${i}`);
  assert.equal(leftBy.size + held, sent, `of ${sent} msgs ${leftBy.size} left and ${held} are held: ${sent - leftBy.size - held} lost (e.g. ${missing.join(", ")})`);
  const outcome: Outcome = { leftBy, msgs, held, sent, storeFailed: tally.storeFailed };
  if (!tally.storeFailed) tally.gateCase.verdicts?.(outcome);
  return outcome;
}

/** The msgs `m<from>` to `m<to - 1>` had real verdicts: none failed open, was refused as overloaded or went to Catch. */
export function assertJudged(outcome: Outcome, from: number, to: number): void {
  const failed: string[] = [];
  for (let i = from; i < to; i++) {
    const id = `m${i}`;
    const by = outcome.leftBy.get(id);
    const reason = reasonOfMsg(outcome.msgs.get(id));
    if (by === "caught" || reason === "fail_open" || reason === "overloaded") failed.push(`${id} (${by === "caught" ? String((outcome.msgs.get(id)?.error as { message?: string } | undefined)?.message) : reason})`);
  }
  assert.deepEqual(failed.slice(0, 5), [], `${failed.length} of ${to - from} msgs sent once the store was back had no real verdict`);
}

/** The gate's msgs of one run: `m<i>` for i in [from, to). */
export function sendRange(deployment: Deployed, gateCase: GateCase, from: number, to: number): void {
  for (let i = from; i < to; i++) deployment.send({ ...gateCase.msg(i), messageId: `m${i}` });
}

export { redeploy };
