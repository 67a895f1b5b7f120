import helper from "node-red-node-test-helper";
import type { Node, NodeMessage } from "node-red";
import capConfig from "../../src/nodes/capConfig";
import frequencyCapGate from "../../src/nodes/frequencyCapGate";
import suppressionGate from "../../src/nodes/suppressionGate";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const catchNode = require("@node-red/nodes/core/common/25-catch.js");

helper.init(require.resolve("node-red"));

/**
 * The runtime gives nodes its hooks (RED.hooks), which a closing gate uses to
 * see what a deploy dropped on its way out; the test helper's own runtime
 * leaves them out, so its node API gets the runtime's hooks here.
 */
function withRuntimeHooks(): void {
  const internals = helper as unknown as { _registryUtil?: { createNodeApi(node: object): Record<string, unknown> } };
  const registryUtil = internals._registryUtil;
  if (!registryUtil) return;
  const create = registryUtil.createNodeApi.bind(registryUtil);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { hooks } = require("@node-red/util") as { hooks: unknown };
  registryUtil.createNodeApi = (node) => {
    const api = create(node);
    api.hooks ??= hooks;
    return api;
  };
}
withRuntimeHooks();

export { helper };
export const gateNodes = [capConfig, frequencyCapGate, suppressionGate, catchNode];

/**
 * Deploys `flows` (a "nodes" deploy restarts only the nodes that changed) and
 * waits up to `timeoutMs` for them to start. The helper's own setFlows gives
 * the start 300 ms from when the stop ends, which a loaded CI box overran
 * ("timeout waiting event") while the stopped gate's last msgs were still
 * reaching the nodes after it.
 */
export async function redeploy(flows: object[], type: "full" | "flows" | "nodes", timeoutMs = 10_000): Promise<void> {
  const internals = helper as unknown as {
    _redNodes: { setFlows(flows: object[], credentials: object, type: string): Promise<unknown> };
    _events: { on(event: string, listener: () => void): void; off(event: string, listener: () => void): void };
  };
  let onStarted = (): void => undefined;
  const started = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      internals._events.off("flows:started", onStarted);
      reject(new Error(`the flows did not start within ${timeoutMs} ms of the deploy`));
    }, timeoutMs);
    onStarted = () => {
      clearTimeout(timer);
      internals._events.off("flows:started", onStarted);
      resolve();
    };
    internals._events.on("flows:started", onStarted);
  });
  try {
    await internals._redNodes.setFlows(flows, {}, type);
  } catch (err) {
    // no start is coming: stop waiting for one (a timer left running would fail a later test)
    onStarted();
    throw err;
  }
  await started;
}

/** A flow node must carry z, x, y or the runtime takes it for a config node. */
export function flowNode<T extends Record<string, unknown>>(props: T): T & { z: string; x: number; y: number } {
  return { z: "tab1", x: 100, y: 100, ...props };
}

export const TAB = { id: "tab1", type: "tab", label: "test" };

export type Msg = NodeMessage & Record<string, unknown>;

/** Collects what each named helper node receives. */
export class Collector {
  readonly got = new Map<string, Msg[]>();
  /** every msg in the order it arrived, whichever helper it reached */
  readonly sequence: { id: string; msg: Msg }[] = [];

  constructor(ids: string[]) {
    for (const id of ids) {
      const list: Msg[] = [];
      this.got.set(id, list);
      (helper.getNode(id) as Node).on("input", (msg: NodeMessage) => {
        list.push(msg);
        this.sequence.push({ id, msg: msg });
      });
    }
  }

  of(id: string): Msg[] {
    return this.got.get(id) ?? [];
  }

  total(): number {
    let n = 0;
    for (const list of this.got.values()) n += list.length;
    return n;
  }

  /** Waits until `count` msgs have arrived in all, or fails after `timeoutMs`. */
  async until(count: number, timeoutMs = 5000): Promise<void> {
    const started = Date.now();
    while (this.total() < count) {
      if (Date.now() - started > timeoutMs) throw new Error(`expected ${count} msgs, got ${this.total()}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

/** The reason a msg's verdict gives (`fail_open`, `frequency_capped`…), if any. */
export function reasonOf(msg: Msg | undefined): string | undefined {
  return (msg?.admission as { reason?: string } | undefined)?.reason;
}

/** Every warning Node-RED logged so far in this test (the helper's log spy). */
export function warnings(): string[] {
  const spy = helper.log() as unknown as { args: [{ level: number; msg: unknown }][] };
  return spy.args.map(([entry]) => entry).filter((e) => e.level === 30).map((e) => String(e.msg));
}
