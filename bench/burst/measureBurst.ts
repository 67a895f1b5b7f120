import type { Node } from "node-red";
import type { Completions } from "../load/completions";
import { MsgSource, type BenchMsg } from "../load/msgSource";
import { PlaceTally, type PlacedMsg } from "../load/placeTally";
import { sumVerdicts, type Verdicts } from "../load/verdicts";
import { collectGarbage } from "../../test/support/gc";
import { deployGate } from "../nodeRed/deploy";
import type { EmbeddedRed } from "../nodeRed/embeddedRed";
import { gateFlow, type GateFlow } from "../nodeRed/gateFlow";
import { CHANNEL, capsOf, type StoreKind } from "../scenarios";
import { medianBy } from "../stats";

/** One burst row: msgs handed to the gate in one tick, drained with no bound on msgs in flight. */
export interface BurstRow {
  store: StoreKind;
  caps: number;
  msgs: number;
  /** of the median of the measured bursts (by msgs/s), as are the CPU figures and the verdicts */
  drainMs: number;
  msgsPerSec: number;
  /** the slowest and the fastest of the measured bursts */
  minPerSec: number;
  maxPerSec: number;
  verdicts: Verdicts;
  /** every other burst drained (the unmeasured ones first, and the measured ones besides the median), their verdicts together */
  warmUp: Verdicts;
  /** msgs/s of the first of them, the gate's first burst after its deploy */
  firstBurstPerSec: number;
  /** the most heap in use while draining a measured burst, MB */
  peakHeapMb: number;
  /** set: measured in a Node started with `--max-semi-space-size` of this many MB (youngGen.ts) */
  youngGenMb?: number;
  /** this process's CPU (Node-RED, the gate, the bench's own tally) per msg while draining, µs */
  nodeCpuUsPerMsg: number;
  /** Redis's CPU per msg while draining, µs (Redis rows) */
  redisCpuUsPerMsg?: number;
  /** true: the cap-config kept a decision history (historySize 10), the twin of the row with the default (none) */
  history: boolean;
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
  /** true: historySize 10 (the default keeps none) */
  history?: boolean;
}

/** unmeasured bursts of the row's size each row drains first, on recipients of their own */
const WARM_UPS = 2;
/** measured bursts after them, each on recipients of its own: the row is their median (this box's speed drifts ±15 % within a minute) */
export const MEASURED = 3;

/** One unmeasured burst's verdicts and drain. */
interface WarmUp {
  verdicts: Verdicts;
  drainMs: number;
}

/** One measured burst's figures. */
interface Sample {
  drainMs: number;
  perSec: number;
  verdicts: Verdicts;
  peakHeap: number;
  nodeCpuUs: number;
  redisCpuUs?: number;
}

/**
 * What a split node does to a gate: every msg of the burst arrives in one
 * tick. The gate is deployed with the cap-config's defaults (timeoutMs 50,
 * maxQueued 1,500,000), as a flow author would leave them: a burst that fails
 * open or overflows shows in the row. Two unmeasured bursts of the same size
 * to other recipients go through the same gate first: the row measures a
 * Node-RED that has run the gate before (V8 has compiled its code), as the
 * raw EVALSHA it is compared with measures a warm client. The first of them,
 * a burst right after the deploy, is reported beside it (`first burst`).
 * Then MEASURED bursts, each to recipients of its own: the row is the median
 * one, with the slowest and the fastest beside it.
 */
export async function runBurst(red: EmbeddedRed, completions: Completions, options: BurstOptions): Promise<BurstRow> {
  const history = options.history === true;
  const { gate } = await deployGate(red, burstFlow(options, history));
  const warmUps = await warmUp(gate, completions, options);
  const samples: Sample[] = [];
  for (let m = 0; m < MEASURED; m++) samples.push(await measuredBurst(gate, completions, options, m));
  return rowOf(options, history, warmUps, samples);
}

/** the twins' turns, each a deploy of its own: off, on, on, off (ABBA) */
const TWIN_TURNS = [false, true, true, false] as const;

/**
 * A row without a decision history and its twin with one of 10 (historySize
 * 10), measured in turns, off, on, on, off, each turn a deploy of its own
 * (the one before it and its store let go): each row is the median of its
 * two turns' measured bursts. A row measured right after another inherits
 * its heap and its Redis; in ABBA turns neither gains nor loses by its
 * place.
 */
export async function runBurstTwins(red: EmbeddedRed, completions: Completions, options: BurstOptions): Promise<[BurstRow, BurstRow]> {
  const turns = { off: { warmUps: [] as WarmUp[], samples: [] as Sample[] }, on: { warmUps: [] as WarmUp[], samples: [] as Sample[] } };
  for (const [turn, history] of TWIN_TURNS.entries()) {
    const own: BurstOptions = { ...options, keyPrefix: `${options.keyPrefix}${history ? "-hist10" : ""}-t${turn}`, history };
    const { gate } = await deployGate(red, burstFlow(own, history));
    const into = history ? turns.on : turns.off;
    into.warmUps.push(...await warmUp(gate, completions, own));
    for (let m = 0; m < MEASURED; m++) into.samples.push(await measuredBurst(gate, completions, own, m));
  }
  return [rowOf(options, false, turns.off.warmUps, turns.off.samples), rowOf(options, true, turns.on.warmUps, turns.on.samples)];
}

function burstFlow(options: BurstOptions, history: boolean): GateFlow {
  const scenario = { name: `burst-${options.store}-${options.caps}cap`, store: options.store, rulesSource: "inline" as const, rules: capsOf(options.caps) };
  return gateFlow(scenario, options.keyPrefix, { keyPrefix: options.keyPrefix, redisUrl: options.redisUrl, ...(history ? { historySize: 10 } : {}) });
}

/** The unmeasured bursts a row drains first, on recipients of their own. */
async function warmUp(gate: Node, completions: Completions, options: BurstOptions): Promise<WarmUp[]> {
  const warmUps: WarmUp[] = [];
  for (let w = 0; w < WARM_UPS; w++) {
    const warmSource = new MsgSource({ tag: `${options.keyPrefix}-warm${w}`, recipients: options.recipients, recipientPrefix: `+178${w}`, channel: CHANNEL, seed: options.seed + 1 + w });
    const burst = Array.from({ length: options.msgs }, () => warmSource.next());
    collectGarbage();
    warmUps.push(await drainBurst(gate, completions, burst));
  }
  return warmUps;
}

/** The row of the median measured burst (by msgs/s), with the slowest and fastest beside it. */
function rowOf(options: BurstOptions, history: boolean, warmUps: WarmUp[], samples: Sample[]): BurstRow {
  const { median, lowest, highest } = medianBy(samples, (x) => x.perSec);
  const others = [...warmUps.map((w) => w.verdicts), ...samples.filter((x) => x !== median).map((x) => x.verdicts)];
  return {
    store: options.store, caps: options.caps, msgs: options.msgs, history, drainMs: median.drainMs, msgsPerSec: median.perSec,
    minPerSec: lowest.perSec, maxPerSec: highest.perSec,
    verdicts: median.verdicts, peakHeapMb: Math.max(...samples.map((x) => x.peakHeap)) / 2 ** 20,
    nodeCpuUsPerMsg: median.nodeCpuUs,
    firstBurstPerSec: options.msgs / (warmUps[0].drainMs / 1000),
    warmUp: sumVerdicts(others),
    ...(median.redisCpuUs !== undefined ? { redisCpuUsPerMsg: median.redisCpuUs } : {}),
  };
}

/** The m-th measured burst: its own recipients, its drain timed, this process's and Redis's CPU read around it. */
async function measuredBurst(gate: Node, completions: Completions, options: BurstOptions, m: number): Promise<Sample> {
  const source = new MsgSource({ tag: `${options.keyPrefix}-m${m}`, recipients: options.recipients, recipientPrefix: `+177${7 - m}`, channel: CHANNEL, seed: options.seed + 10 + m });
  const msgs = Array.from({ length: options.msgs }, () => source.next());
  collectGarbage();
  let peakHeap = process.memoryUsage().heapUsed;
  const redisCpuBefore = await options.redisCpu?.();
  const sampler = setInterval(() => { peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed); }, 20);
  const cpuBefore = process.cpuUsage();
  const { verdicts, drainMs } = await drainBurst(gate, completions, msgs);
  const cpu = process.cpuUsage(cpuBefore);
  const redisCpuAfter = await options.redisCpu?.();
  clearInterval(sampler);
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  return {
    drainMs, perSec: options.msgs / (drainMs / 1000), verdicts, peakHeap, nodeCpuUs: (cpu.user + cpu.system) / options.msgs,
    ...(redisCpuBefore !== undefined && redisCpuAfter !== undefined ? { redisCpuUs: ((redisCpuAfter - redisCpuBefore) * 1e6) / options.msgs } : {}),
  };
}

/**
 * Hands `msgs` to the gate in one tick and empties the array (a split node
 * keeps none of the msgs it sent: kept here, each would keep its admission
 * alive to the end of the row); resolves when each has completed once (PlaceTally).
 */
async function drainBurst(gate: Node, completions: Completions, msgs: BenchMsg[]): Promise<{ verdicts: Verdicts; drainMs: number }> {
  const run = new PlaceTally(msgs.length, "burst");
  msgs.forEach((msg, i) => { (msg as PlacedMsg).seq = i; });
  const stopWatching = completions.watchNode(gate.id, run);
  const began = performance.now();
  for (const msg of msgs) gate.receive(msg);
  msgs.length = 0;
  const ended = await run.finished;
  stopWatching();
  return { verdicts: run.verdicts, drainMs: ended - began };
}
