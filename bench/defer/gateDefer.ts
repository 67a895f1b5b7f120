import type { Node } from "node-red";
import type { Admission } from "../../src/core/admission";
import type { Completions } from "../load/completions";
import type { BenchMsg } from "../load/msgSource";
import { deployGate } from "../nodeRed/deploy";
import type { CompleteEvent, EmbeddedRed } from "../nodeRed/embeddedRed";
import type { DeferRow } from "../report/deferTable";
import { CHANNEL, ORG } from "../scenarios";
import { summarize } from "../stats";

/** The cap of this row: one send per recipient per second, the next one held until the slot frees. */
export const DEFER_CAP = { id: "d", scope: "channel", channel: CHANNEL, max_count: 1, window_seconds: 1, disposition: "defer" } as const;

/** gate `deferMax` (s): far above the ~1 s hold, so no msg leaves with defer_expired */
const DEFER_MAX_S = 3_600;
/** cap-config timeoutMs: no claim fails open for being slow */
const CLAIM_TIMEOUT_MS = 1_000;
/** give up when no msg completes or is released for this long */
const STALL_MS = 10_000;
const HOOK = "onComplete.sgbenchDefer";
const whole = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

export interface GateDeferOptions {
  redisUrl: string;
  keyPrefix: string;
  /** recipients: each gets two msgs, the second held, so this many held and released */
  msgs: number;
  /** msgs in the gate at once */
  concurrency: number;
  /** unreported pairs first (other recipients), each released before the measured ones start */
  warmup: number;
}

interface DeferFlow {
  gateId: string;
  configId: string;
  sinkId: string;
  nodes: object[];
}

/**
 * cap-config (redis store, the one defer cap) → frequency-cap-gate whose third
 * output (deferred) is wired to a junction: a msg released by the gate is
 * delivered through Node-RED's router, and the junction's done() is heard by
 * the onComplete hook.
 */
function deferFlow(tag: string, options: GateDeferOptions): DeferFlow {
  const tabId = `bench-tab-${tag}`;
  const configId = `bench-cfg-${tag}`;
  const gateId = `bench-gate-${tag}`;
  const sinkId = `bench-sink-${tag}`;
  return {
    gateId,
    configId,
    sinkId,
    nodes: [
      { id: tabId, type: "tab", label: "bench defer" },
      {
        id: configId, type: "cap-config", name: "defer", store: "redis", redisUrl: options.redisUrl, keyPrefix: options.keyPrefix,
        defaultOrg: ORG, rulesSource: "inline", rules: [{ ...DEFER_CAP }], failMode: "open", timeoutMs: CLAIM_TIMEOUT_MS,
      },
      {
        id: gateId, type: "frequency-cap-gate", z: tabId, name: "defer", config: configId, mode: "claim",
        deferMax: DEFER_MAX_S, x: 200, y: 100, wires: [[], [], [sinkId]],
      },
      { id: sinkId, type: "junction", z: tabId, x: 400, y: 100, wires: [[]] },
    ],
  };
}

/**
 * Deploys the flow, then per recipient: a first msg (claims the slot, allowed),
 * and, as soon as the gate is done with it, a second (capped: held in the
 * cap-config's Redis queue until the slot frees ~1 s later). Held/s = the
 * second msgs held over the send phase (which also carries the first msgs);
 * released/s = msgs leaving the deferred output, first to last; lateness =
 * arrival at the junction − the admission's release_at.
 */
export async function runGateDefer(red: EmbeddedRed, completions: Completions, options: GateDeferOptions): Promise<DeferRow> {
  const flow = deferFlow(options.keyPrefix, options);
  const { gate, config } = await deployGate(red, flow);
  if (config.service?.store.kind !== "redis") throw new Error(`defer-gate: the cap-config's store is ${config.service?.store.kind}, not redis`);
  const released = new Map<string, (event: CompleteEvent) => void>();
  red.hooks.add(HOOK, (event) => {
    if (event.node.id !== flow.sinkId) return;
    const id = event.msg._msgid;
    const waiter = id === undefined ? undefined : released.get(id);
    if (!waiter) return;
    released.delete(id as string);
    waiter(event);
  });
  try {
    if (options.warmup > 0) await pairs(gate, completions, released, { ...options, msgs: options.warmup }, `${options.keyPrefix}-w`, "+1333");
    const run = await pairs(gate, completions, released, options, `${options.keyPrefix}-m`, "+1222");
    const left = await config.service?.deferrals.queueOf(gate.id).size();
    if (left !== 0) throw new Error(`defer-gate: ${left} msgs still held after all were released`);
    const { p50, p99 } = summarize(run.latenessMs);
    return {
      path: "frequency-cap-gate → deferred (Node-RED, redis)",
      msgs: options.msgs,
      deferredPerSec: options.msgs / (run.sendMs / 1000),
      releasedPerSec: options.msgs / (run.releaseSpanMs / 1000),
      latenessP50Ms: p50,
      latenessP99Ms: p99,
      note: `${whole.format(options.msgs)} recipients × 2 msgs, ${options.concurrency} in flight; gate ${whole.format((2 * options.msgs) / (run.sendMs / 1000))} msgs/s while holding`,
    };
  } finally {
    red.hooks.remove(HOOK);
  }
}

interface PairsResult {
  /** first msg in to last second msg done */
  sendMs: number;
  /** first release to last release */
  releaseSpanMs: number;
  latenessMs: Float64Array;
}

function pairs(
  gate: Node, completions: Completions, released: Map<string, (event: CompleteEvent) => void>,
  options: GateDeferOptions, tag: string, recipientPrefix: string,
): Promise<PairsResult> {
  const count = options.msgs;
  const latenessMs = new Float64Array(count);
  const seconds: number[] = [];
  let firstsIssued = 0;
  let inFlight = 0;
  let held = 0;
  let secondsDone = 0;
  let releasedCount = 0;
  let firstRelease = 0;
  let lastRelease = 0;
  let sendMs = 0;
  let refillScheduled = false;
  let lastProgress = performance.now();
  const began = performance.now();

  return new Promise((resolve, reject) => {
    let over = false;
    function fail(err: Error): void {
      if (over) return;
      over = true;
      clearInterval(watchdog);
      completions.forgetAll();
      released.clear();
      reject(err);
    }
    const watchdog = setInterval(() => {
      if (performance.now() - lastProgress < STALL_MS) return;
      fail(new Error(`defer-gate: nothing happened for ${STALL_MS} ms (${held}/${count} held, ${releasedCount} released)`));
    }, 500);

    function msgOf(i: number, which: "a" | "b"): BenchMsg {
      const id = `${tag}-${which}-${i}`;
      return { _msgid: id, messageId: id, recipient: `${recipientPrefix}${String(i).padStart(7, "0")}`, channel: CHANNEL, payload: "bench" };
    }

    function issueFirst(): void {
      const i = firstsIssued++;
      const msg = msgOf(i, "a");
      inFlight++;
      completions.expect(msg._msgid, (event) => {
        inFlight--;
        lastProgress = performance.now();
        const admission = admissionOf(event);
        if (event.error || admission?.status !== "allowed" || admission.reason === "fail_open") {
          fail(new Error(`defer-gate: first msg to ${msg.recipient} not admitted (${event.error?.message ?? `${admission?.status} ${admission?.reason ?? ""}`})`));
          return;
        }
        // the second goes in as soon as possible, well inside the 1 s window
        seconds.push(i);
        schedule();
      });
      gate.receive(msg);
    }

    function issueSecond(i: number): void {
      const msg = msgOf(i, "b");
      inFlight++;
      // expected at the junction before the gate can release it: the release is ~1 s off
      released.set(msg._msgid, (event) => onReleased(i, event));
      completions.expect(msg._msgid, (event) => {
        inFlight--;
        lastProgress = performance.now();
        const admission = admissionOf(event);
        if (event.error || admission?.status !== "skipped" || admission.reason !== "frequency_capped" || admission.deferrals !== 1) {
          fail(new Error(`defer-gate: second msg to ${msg.recipient} not held (${event.error?.message ?? `${admission?.status} ${admission?.reason ?? ""}`})`));
          return;
        }
        held++;
        secondsDone++;
        if (secondsDone === count) sendMs = performance.now() - began;
        schedule();
        check();
      });
      gate.receive(msg);
    }

    function onReleased(i: number, event: CompleteEvent): void {
      const now = performance.now();
      const admission = admissionOf(event);
      const releaseAt = admission?.release_at ? Date.parse(admission.release_at) : Number.NaN;
      if (admission?.status !== "deferred" || !Number.isFinite(releaseAt)) {
        fail(new Error(`defer-gate: msg ${i} left deferred as ${admission?.status}, release_at ${admission?.release_at}`));
        return;
      }
      latenessMs[releasedCount] = Date.now() - releaseAt;
      if (releasedCount === 0) firstRelease = now;
      lastRelease = now;
      lastProgress = now;
      releasedCount++;
      check();
    }

    function check(): void {
      if (over || releasedCount < count || secondsDone < count) return;
      over = true;
      clearInterval(watchdog);
      resolve({ sendMs, releaseSpanMs: Math.max(lastRelease - firstRelease, 1), latenessMs });
    }

    function schedule(): void {
      if (refillScheduled || over) return;
      refillScheduled = true;
      setImmediate(refill);
    }

    // seconds first: each must follow its first msg closely
    function refill(): void {
      refillScheduled = false;
      if (over) return;
      while (inFlight < options.concurrency) {
        const i = seconds.shift();
        if (i !== undefined) issueSecond(i);
        else if (firstsIssued < count) issueFirst();
        else break;
      }
    }

    refill();
  });
}

function admissionOf(event: CompleteEvent): Admission | undefined {
  return (event.msg as { admission?: Admission }).admission;
}
