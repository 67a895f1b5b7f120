import type { Completions } from "../load/completions";
import { MsgSource } from "../load/msgSource";
import { noVerdicts, tally, type Verdicts } from "../load/verdicts";
import { collectGarbage } from "../../test/support/gc";
import { deployGate } from "../nodeRed/deploy";
import type { EmbeddedRed } from "../nodeRed/embeddedRed";
import { gateFlow } from "../nodeRed/gateFlow";
import { CHANNEL, capsOf, type StoreKind } from "../scenarios";

/** One burst row: msgs handed to the gate in one tick, drained with no bound on msgs in flight. */
export interface BurstRow {
  store: StoreKind;
  caps: number;
  msgs: number;
  drainMs: number;
  msgsPerSec: number;
  verdicts: Verdicts;
  /** the most heap in use while draining, MB */
  peakHeapMb: number;
  /** this process's CPU (Node-RED, the gate, the bench's own tally) per msg while draining, µs */
  nodeCpuUsPerMsg: number;
  /** Redis's CPU per msg while draining, µs (Redis rows) */
  redisCpuUsPerMsg?: number;
}

export interface BurstOptions {
  store: StoreKind;
  caps: number;
  msgs: number;
  recipients: number;
  redisUrl: string;
  keyPrefix: string;
  seed: number;
  /** Redis's CPU seconds so far (Redis rows): read before and after the drain */
  redisCpu?: () => Promise<number>;
}

/**
 * What a split node does to a gate: every msg of the burst arrives in one
 * tick. The gate is deployed with the cap-config's defaults (timeoutMs 50,
 * maxQueued 100,000), as a flow author would leave them: a burst that fails
 * open or overflows shows in the row.
 */
export async function runBurst(red: EmbeddedRed, completions: Completions, options: BurstOptions): Promise<BurstRow> {
  const scenario = { name: `burst-${options.store}-${options.caps}cap`, store: options.store, rulesSource: "inline" as const, rules: capsOf(options.caps) };
  const flow = gateFlow(scenario, options.keyPrefix, { keyPrefix: options.keyPrefix, redisUrl: options.redisUrl });
  const { gate } = await deployGate(red, flow);
  const source = new MsgSource({ tag: options.keyPrefix, recipients: options.recipients, recipientPrefix: "+1777", channel: CHANNEL, seed: options.seed });
  const msgs = Array.from({ length: options.msgs }, () => source.next());
  collectGarbage();
  const verdicts = noVerdicts();
  let peakHeap = process.memoryUsage().heapUsed;
  const redisCpuBefore = await options.redisCpu?.();
  const sampler = setInterval(() => { peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed); }, 20);
  const cpuBefore = process.cpuUsage();
  const began = performance.now();
  const drained = new Promise<number>((resolve) => {
    let left = msgs.length;
    for (const msg of msgs) {
      completions.expect(msg._msgid, (event) => {
        tally(verdicts, event);
        if (--left === 0) resolve(performance.now());
      });
    }
  });
  for (const msg of msgs) gate.receive(msg);
  const ended = await drained;
  const cpu = process.cpuUsage(cpuBefore);
  const redisCpuAfter = await options.redisCpu?.();
  clearInterval(sampler);
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  const drainMs = ended - began;
  return {
    store: options.store, caps: options.caps, msgs: options.msgs, drainMs,
    msgsPerSec: options.msgs / (drainMs / 1000), verdicts, peakHeapMb: peakHeap / 2 ** 20,
    nodeCpuUsPerMsg: (cpu.user + cpu.system) / options.msgs,
    ...(redisCpuBefore !== undefined && redisCpuAfter !== undefined ? { redisCpuUsPerMsg: ((redisCpuAfter - redisCpuBefore) * 1e6) / options.msgs } : {}),
  };
}
