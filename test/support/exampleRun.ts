import assert from "node:assert/strict";
import type { Node, NodeMessage } from "node-red";
import type { CapConfigNode } from "../../src/nodes/gate/capConfigNode";
import quietHoursGate from "../../src/nodes/quietHoursGate";
import throughputGate from "../../src/nodes/throughputGate";
import type { FlowNode } from "./exampleFlow";
import { gateNodes, helper, type Msg } from "./nodeRed";

/* eslint-disable @typescript-eslint/no-require-imports */
const coreNodes = [
  require("@node-red/nodes/core/function/10-function.js"),
  require("@node-red/nodes/core/common/20-inject.js"),
  require("@node-red/nodes/core/common/21-debug.js"),
  require("@node-red/nodes/core/common/90-comment.js"),
];


/**
 * An example flow loaded into node-red-node-test-helper exactly as shipped,
 * driven as a person would drive it: inject buttons pressed by name, what
 * reaches each debug node collected by the debug node's name.
 */
export class ExampleRun {
  private readonly seen = new Map<string, Msg[]>();

  private constructor(readonly flow: FlowNode[]) {}

  static async load(flow: FlowNode[]): Promise<ExampleRun> {
    await helper.load([...gateNodes, quietHoursGate, throughputGate, ...coreNodes], flow);
    const run = new ExampleRun(flow);
    for (const debug of flow.filter((n) => n.type === "debug")) {
      const list: Msg[] = [];
      run.seen.set(String(debug.name), list);
      (helper.getNode(debug.id) as Node).on("input", (m: NodeMessage) => list.push(m as Msg));
    }
    return run;
  }

  /** The id of the one node of `type` named `name`. */
  id(type: string, name: string): string {
    const found = this.flow.filter((n) => n.type === type && n.name === name);
    assert.equal(found.length, 1, `the flow has ${found.length} ${type} nodes named "${name}"`);
    return found[0].id;
  }

  /** What reached the debug node `name` so far. */
  of(name: string): Msg[] {
    const list = this.seen.get(name);
    assert.ok(list, `the flow has no debug node named "${name}"`);
    return list;
  }

  total(): number {
    let n = 0;
    for (const list of this.seen.values()) n += list.length;
    return n;
  }

  /**
   * Presses an inject `times` times, each press once the one before has
   * finished: `outputs` new msgs at the debug nodes and `holds` more msgs held
   * by a gate (held anew or merged into a held one). By default a press
   * gives one msg, or none when it is to be held.
   */
  async press(name: string, { times = 1, holds = 0, outputs = holds > 0 ? 0 : 1 }: { times?: number; holds?: number; outputs?: number } = {}): Promise<void> {
    const inject = helper.getNode(this.id("inject", name)) as Node;
    for (let i = 0; i < times; i++) {
      const before = { outputs: this.total(), holds: this.holds() };
      inject.receive({});
      await this.until(() => this.total() >= before.outputs + outputs, `press ${i + 1} of "${name}" gave ${this.total() - before.outputs} of ${outputs} msgs`);
      await this.until(() => this.holds() >= before.holds + holds, `press ${i + 1} of "${name}" held ${this.holds() - before.holds} of ${holds} msgs`);
    }
  }

  /** The gates of the flow that hold msgs in a cap-config's defer queue. */
  private gates(): FlowNode[] {
    return this.flow.filter((g) => typeof g.config === "string" && g.type.endsWith("-gate"));
  }

  /** How many times the flow's gates held a msg so far (the count the Admission sidebar shows: merged ones too). */
  holds(): number {
    let n = 0;
    for (const gate of this.gates()) {
      for (const count of this.serviceOf(gate.id).metrics.gate(gate.id, gate.type).held.values()) n += count;
    }
    return n;
  }

  /** The defer queue of one gate, in its cap-config's service. */
  queueOf(gateId: string) {
    return this.serviceOf(gateId).deferrals.queueOf(gateId);
  }

  private serviceOf(gateId: string) {
    const gate = this.flow.find((n) => n.id === gateId);
    const config = helper.getNode(String(gate?.config)) as CapConfigNode | null;
    assert.ok(config?.service, `gate ${gateId} has no running cap-config`);
    return config.service;
  }

  async until(done: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
    await this.untilAsync(async () => done(), what, timeoutMs);
  }

  async untilAsync(done: () => Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
    const started = Date.now();
    while (!(await done())) {
      if (Date.now() - started > timeoutMs) assert.fail(`${what} (after ${timeoutMs} ms)`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

/** What an inject node sets, property by property (its `v` values, as written). */
export function injectProps(node: FlowNode | undefined): Record<string, unknown> {
  assert.ok(node && Array.isArray(node.props), "not an inject node");
  return Object.fromEntries((node.props as { p: string; v?: unknown }[]).map((p) => [p.p, p.v]));
}

/** The verdict a gate wrote on a msg. */
export function admissionOf(msg: Msg | undefined): Record<string, unknown> {
  return (msg?.admission ?? {}) as Record<string, unknown>;
}
