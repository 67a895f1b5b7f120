import assert from "node:assert/strict";
import type { Node, NodeStatus } from "node-red";
import type { CapService } from "../../src/core/capService";
import { ConfigError, SettingError } from "../../src/core/errors";
import type { RulesProviderState } from "../../src/core/rules/rulesProvider";
import type { StoreState } from "../../src/core/store/admissionStore";
import { GateStatus } from "../../src/nodes/gate/status";
import { formatCount, STATUS_MAX_CHARS, statusLine } from "../../src/nodes/gate/statusText";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A node that keeps every status it is given. */
function fakeNode(): { node: Node; shown: NodeStatus[] } {
  const shown: NodeStatus[] = [];
  const node = { status: (s: NodeStatus) => shown.push(s) } as unknown as Node;
  return { node, shown };
}

/** The parts of a CapService that GateStatus watches, with their states set by the test. */
function fakeService(failMode: "open" | "closed", store: StoreState = "ready") {
  let storeListener: ((s: StoreState) => void) | undefined;
  let rulesState: RulesProviderState = "ok";
  let rulesListener: ((s: RulesProviderState) => void) | undefined;
  const service = {
    settings: { failMode },
    access: {},
    store: { state: () => store, onStateChange: (l: (s: StoreState) => void) => { storeListener = l; return () => undefined; } },
    rules: { state: () => rulesState, onStateChange: (l: (s: RulesProviderState) => void) => { rulesListener = l; return () => undefined; } },
  } as unknown as CapService;
  return {
    service,
    setStore: (s: StoreState) => { store = s; storeListener?.(s); },
    setRules: (s: RulesProviderState) => { rulesState = s; rulesListener?.(s); },
  };
}

async function settled(shown: NodeStatus[]): Promise<NodeStatus> {
  await sleep(300);
  const last = shown.at(-1);
  assert.ok(last, "no status drawn");
  return last;
}

describe("nodes/statusText", () => {
  it("writes counts exactly while short, then rounded down", () => {
    assert.deepEqual([0, 1204, 12034, 99_999, 123_456, 1_234_567, 45_600_000].map(formatCount),
      ["0", "1,204", "12,034", "99,999", "123k", "1.2M", "45M"]);
  });

  it("keeps the most important parts that fit in 30 characters, never cutting one but the first", () => {
    assert.equal(statusLine(["✓ 1,204", "✗ 37", "held 3"]), "✓ 1,204 · ✗ 37 · held 3");
    assert.equal(statusLine(["fail-open: redis-cluster down", "✓ 1,204"]), "fail-open: redis-cluster down");
    assert.equal(statusLine(["✓ 99,999", "✗ 99,999", "held 99,999", "queued 99,999"]), "✓ 99,999 · ✗ 99,999");
    assert.equal(statusLine(["a".repeat(40)]).length, STATUS_MAX_CHARS);
  });
});

describe("nodes/gateStatus", () => {
  it("counts bad msgs without colouring the dot: a bad msg goes to Catch, the store is fine", async () => {
    const { node, shown } = fakeNode();
    const status = new GateStatus(node, "redis");
    status.watch(fakeService("open").service);
    for (let i = 0; i < 1204; i++) status.allowed();
    for (let i = 0; i < 37; i++) status.skipped();
    for (let i = 0; i < 5; i++) status.error("recipient: required");
    const last = await settled(shown);
    assert.deepEqual(last, { fill: "green", shape: "dot", text: "✓ 1,204 · ✗ 37 · caught 5" });
  });

  it("colours the dot by the store's health: connecting and failing open yellow, down with fail closed red", async () => {
    const { node, shown } = fakeNode();
    const open = fakeService("open", "connecting");
    const status = new GateStatus(node, "redis");
    status.watch(open.service);
    assert.deepEqual(await settled(shown), { fill: "yellow", shape: "ring", text: "connecting · ✓ 0 · ✗ 0" });
    open.setStore("down");
    assert.deepEqual(await settled(shown), { fill: "yellow", shape: "ring", text: "fail-open: redis down · ✓ 0" });
    open.setStore("ready");
    assert.equal((await settled(shown)).fill, "green");
    status.failOpen();
    assert.deepEqual(await settled(shown), { fill: "yellow", shape: "dot", text: "fail-open · ✓ 0 · ✗ 0" });
    status.stop();

    const closed = fakeService("closed", "down");
    const other = fakeNode();
    const strict = new GateStatus(other.node, "redis-cluster");
    strict.watch(closed.service);
    assert.deepEqual(await settled(other.shown), { fill: "red", shape: "ring", text: "redis-cluster down · ✓ 0 · ✗ 0" });
    closed.setStore("ready");
    closed.setRules("stale");
    assert.deepEqual(await settled(other.shown), { fill: "yellow", shape: "ring", text: "rules db down · ✓ 0 · ✗ 0" });
    closed.setRules("unavailable");
    assert.equal((await settled(other.shown)).fill, "red");
    strict.stop();
  });

  it("shows the gate's own held msgs and the cap-config's send queue when there is one", async () => {
    const { node, shown } = fakeNode();
    const status = new GateStatus(node, "memory");
    status.watch(fakeService("open").service);
    status.allowed();
    status.holding(3);
    assert.equal((await settled(shown)).text, "✓ 1 · ✗ 0 · held 3");
    status.queued(12_034);
    assert.equal((await settled(shown)).text, "✓ 1 · ✗ 0 · queued 12,034");
    status.queued(34);
    assert.equal((await settled(shown)).text, "✓ 1 · ✗ 0 · queued 34 · held 3");
    status.holding(0);
    assert.equal((await settled(shown)).text, "✓ 1 · ✗ 0 · queued 34");
    status.queued(0);
    assert.equal((await settled(shown)).text, "✓ 1 · ✗ 0");
    // a throughput-gate's msgs paced in process only (due within 100 ms) count as held beside the queue's, read at each redraw
    let inProcess = 1_200;
    status.alsoHolding(() => inProcess);
    assert.equal((await settled(shown)).text, "✓ 1 · ✗ 0 · held 1,200");
    status.holding(3);
    assert.equal((await settled(shown)).text, "✓ 1 · ✗ 0 · held 1,203");
    inProcess = 0;
    status.allowed();
    assert.equal((await settled(shown)).text, "✓ 2 · ✗ 0 · held 3");
  });

  it("never runs past 30 characters, however large the counts", async () => {
    const { node, shown } = fakeNode();
    const status = new GateStatus(node, "redis-cluster");
    status.watch(fakeService("open", "down").service);
    for (let i = 0; i < 123_456; i++) status.allowed();
    status.holding(45_678);
    status.queued(1_000_000);
    const last = await settled(shown);
    assert.ok(last.text !== undefined && String(last.text).length <= STATUS_MAX_CHARS, String(last.text));
  });

  it("says in a few words why a misconfigured gate cannot work, in a red ring that msgs do not change", async () => {
    const cases: [string | Error, string][] = [
      [new ConfigError(["rule 1 (\"a\") max_count: must be a whole number from 1 to 1000000"]), "cap-config invalid"],
      ["config: no cap-config selected", "no cap-config"],
      [new Error("mode: \"check\" is not available in this version (available: claim, record, release)"), "invalid mode"],
      // a setting is named as its dialog labels it, not by its property
      [new SettingError("deferMax", "deferMax (Defer limit): must be …, got -5", "Defer limit"), "invalid Defer limit"],
    ];
    for (const [problem, text] of cases) {
      const { node, shown } = fakeNode();
      const status = new GateStatus(node, "memory");
      status.broken(problem);
      status.allowed();
      status.error("x");
      await sleep(300);
      assert.deepEqual(shown, [{ fill: "red", shape: "ring", text }]);
    }
  });
});
