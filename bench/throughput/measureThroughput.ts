import type { Node, NodeMessage } from "node-red";
import { collectGarbage } from "../../test/support/gc";
import { deployGate } from "../nodeRed/deploy";
import type { EmbeddedRed } from "../nodeRed/embeddedRed";
import type { StoreKind } from "../scenarios";
import { medianBy, summarize } from "../stats";
import { wallClock } from "../load/wallClock";
import { preciseNow } from "../../src/core/throughput/storeClock";
import { FLOOR_PACER } from "./floorPacer";

/** The gate in skip mode: how many msgs a second it judges (all handed over with a bound on msgs in flight). */
export interface SkipRow {
  store: StoreKind;
  msgs: number;
  msgsPerSec: number;
  allowed: number;
  skipped: number;
  failOpen: number;
}

/** Queue mode (or the delay node) asked for `rate` msgs/s: how fast it really released, and how late each msg left. */
export interface PacingRow {
  who: string;
  rate: number;
  offered: number;
  released: number;
  releasedPerSec: number;
  /** actual − scheduled release time, ms (the gate's scheduled time is the msg's reserved instant, release_at; the delay node's is first + i / rate) */
  p50Ms: number;
  p99Ms: number;
  /** p99 of the msgs released while msgs were still arriving (the same event loop takes them in), and of those released after */
  p99WhileOfferedMs: number;
  p99AfterMs: number;
  /** of a row measured PACING_RUNS times: the run of median p99 is the row, with the lowest and highest p99 of the runs */
  p99RangeMs?: [number, number];
  /** p99 ÷ the floor's p99 offered the same (medians of the same run) */
  p99PerFloor?: number;
}

export interface ThroughputContext {
  red: EmbeddedRed;
  redisUrl: string;
  prefix: string;
  progress: (text: string) => void;
}

export const PACING_RATES: readonly number[] = process.env.BENCH_THROUGHPUT_RATES
  ? process.env.BENCH_THROUGHPUT_RATES.split(",").map(Number)
  : [100, 1_000, 10_000];
/** BENCH_THROUGHPUT_STORES=redis (or memory) runs one store's rows; BENCH_THROUGHPUT_DELAY=0 leaves out the delay node */
const STORES: readonly StoreKind[] = process.env.BENCH_THROUGHPUT_STORES
  ? (process.env.BENCH_THROUGHPUT_STORES.split(",") as StoreKind[])
  : ["memory", "redis"];
const WITH_DELAY_NODE = process.env.BENCH_THROUGHPUT_DELAY !== "0";
const SKIP_MSGS = 50_000;
const IN_FLIGHT = 2_000;
/** each pacing row offers twice the rate for this long, so a queue builds and drains over about twice as long */
const OFFER_MS = 1_000;
const DRAIN_LIMIT_MS = 4_000;
/** each gate and floor row is the median of this many runs (by p99), all of a rate's gate runs before its floor's */
const PACING_RUNS = Number(process.env.BENCH_PACING_RUNS ?? 3);

let deploys = 0;

interface Bench {
  input: Node;
  /** the store's clock, sub-ms: what `on` stamps each msg with */
  now: () => number;
  /** called with each msg that reaches sink `name`, and when */
  on(name: string, listener: (msg: NodeMessage, at: number) => void): void;
}

/** One tab: a cap-config, and `node` wired to the sinks `allowed`, `skipped` (disabled debug nodes we listen on). */
async function deploy(red: EmbeddedRed, store: StoreKind, ctx: ThroughputContext, node: Record<string, unknown>, sinks: string[]): Promise<Bench> {
  const tag = `tp${++deploys}`;
  const tab = `${tag}-tab`;
  const configId = `${tag}-cfg`;
  const gateId = `${tag}-node`;
  const sinkIds = sinks.map((s) => `${tag}-${s}`);
  const nodes = [
    { id: tab, type: "tab", label: `bench ${tag}` },
    { id: configId, type: "cap-config", name: tag, store, redisUrl: ctx.redisUrl, keyPrefix: `${ctx.prefix}-${tag}`, rules: [], failMode: "open", timeoutMs: 1000 },
    { id: gateId, z: tab, x: 200, y: 100, config: configId, ...node, wires: sinkIds.map((id) => [id]) },
    ...sinkIds.map((id, i) => ({ id, z: tab, x: 400, y: 100 + 40 * i, type: "debug", active: false, tosidebar: false, console: false, complete: "false", wires: [] })),
  ];
  await deployGate(red, { gateId, configId, nodes });
  const input = red.nodes.getNode(gateId) as Node;
  // lateness is read on the store's own clock: Redis's TIME is the wall clock, the memory store's the performance clock
  const now = store === "redis" ? wallClock() : preciseNow;
  return {
    input,
    now,
    on(name, listener) {
      const sink = red.nodes.getNode(`${tag}-${name}`) as Node;
      sink.on("input", (msg: NodeMessage) => listener(msg, now()));
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function until(done: () => boolean, limitMs: number): Promise<void> {
  const started = Date.now();
  while (!done() && Date.now() - started < limitMs) await sleep(5);
}

/** Skip mode, 10,000/s with a burst of 10,000: SKIP_MSGS msgs, at most IN_FLIGHT in the gate at once. */
async function skipRow(ctx: ThroughputContext, store: StoreKind): Promise<SkipRow> {
  const bench = await deploy(ctx.red, store, ctx, { type: "throughput-gate", rate: 10_000, burst: 10_000, disposition: "skip" }, ["allowed", "skipped"]);
  let allowed = 0;
  let skipped = 0;
  let failOpen = 0;
  bench.on("allowed", (msg) => {
    allowed++;
    if ((msg as { admission?: { reason?: string } }).admission?.reason) failOpen++;
  });
  bench.on("skipped", () => { skipped++; });
  collectGarbage();
  const started = performance.now();
  let sent = 0;
  while (sent < SKIP_MSGS) {
    while (sent < SKIP_MSGS && sent - allowed - skipped < IN_FLIGHT) {
      bench.input.receive({ recipient: `r${sent % 10_000}`, channel: "sms", messageId: `m${sent}` });
      sent++;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  await until(() => allowed + skipped >= SKIP_MSGS, 30_000);
  const seconds = (performance.now() - started) / 1000;
  return { store, msgs: SKIP_MSGS, msgsPerSec: (allowed + skipped) / seconds, allowed, skipped, failOpen };
}

/** msgs arrive every SLICE_MS (an MQTT or HTTP source spreads them out; one slice's msgs are handled in one tick) */
const SLICE_MS = 2;

/** Offers `times` × `rate` for OFFER_MS, in SLICE_MS slices: exactly times × rate × OFFER_MS / 1000 msgs, spread evenly. */
async function offer(input: Node, rate: number, times = 2): Promise<number> {
  const total = Math.round((rate * times * OFFER_MS) / 1000);
  const slices = OFFER_MS / SLICE_MS;
  let n = 0;
  const started = Date.now();
  for (let slice = 0; slice < slices; slice++) {
    const upTo = Math.round((total * (slice + 1)) / slices);
    while (n < upTo) input.receive({ recipient: `r${n}`, channel: "sms", messageId: `m${n++}` });
    const next = started + (slice + 1) * SLICE_MS;
    await sleep(Math.max(0, next - Date.now()));
  }
  return n;
}

/**
 * A pacer that stamps each held msg with its reserved instant (release_at) at
 * `rate`/s: every held msg's lateness against it, with twice the rate offered
 * (a queue builds and drains) or, `times` 1, the rate itself (msgs wait up to a slice).
 */
async function instantPacing(
  ctx: ThroughputContext, store: StoreKind, node: Record<string, unknown>, who: string, rate: number, times: number,
): Promise<PacingRow> {
  const bench = await deploy(ctx.red, store, ctx, node, ["allowed", "skipped"]);
  const late: number[] = [];
  const at: number[] = [];
  let out = 0;
  bench.on("allowed", (msg, when) => {
    out++;
    const releaseAt = (msg as { admission?: { release_at?: string } }).admission?.release_at;
    if (releaseAt === undefined) return;
    // release_at is whole ms, rounded up from the reserved µs, and `when` is on the store's clock: lateness below 0 cannot happen, below 1 ms is rounding
    late.push(when - Date.parse(releaseAt));
    at.push(when);
  });
  bench.on("skipped", () => { out++; });
  collectGarbage();
  const offerEnd = bench.now() + OFFER_MS;
  const offered = await offer(bench.input, rate, times);
  await until(() => out >= offered, DRAIN_LIMIT_MS);
  return pacingRow(`${who}${times === 1 ? ", offered 1×" : ""}`, rate, offered, late, at, offerEnd);
}

/** The gate in queue mode at `rate`/s, burst 1. */
function gatePacing(ctx: ThroughputContext, store: StoreKind, rate: number, times = 2): Promise<PacingRow> {
  return instantPacing(ctx, store, { type: "throughput-gate", rate, burst: 1, disposition: "queue", maxWait: 60 }, `throughput-gate queue (${store})`, rate, times);
}

/** The reference pacer (floorPacer: the same GCRA in memory, nothing else), offered as the gate is: its lateness is the floor. */
function floorPacing(ctx: ThroughputContext, rate: number, times = 2): Promise<PacingRow> {
  return instantPacing(ctx, "memory", { type: FLOOR_PACER, rate }, "floor: a bare in-process pacer", rate, times);
}

/** The core delay node, rate-limit mode, all msgs in one stream (not per topic), none dropped: the same offer. */
async function delayPacing(ctx: ThroughputContext, rate: number): Promise<PacingRow> {
  const bench = await deploy(ctx.red, "memory", ctx, {
    type: "delay", pauseType: "rate", timeout: "5", timeoutUnits: "seconds", rate: String(rate), nbRateUnits: "1", rateUnits: "second",
    randomFirst: "1", randomLast: "5", randomUnits: "seconds", drop: false, allowrate: false, outputs: 1,
  }, ["allowed"]);
  const times: number[] = [];
  bench.on("allowed", (_msg, at) => { times.push(at); });
  collectGarbage();
  const offerEnd = bench.now() + OFFER_MS;
  const offered = await offer(bench.input, rate);
  // it never catches up at the higher rates: what it released by the time the gate had drained is its rate
  await until(() => times.length >= offered, DRAIN_LIMIT_MS);
  const first = times[0] ?? 0;
  const late = times.map((at, i) => at - (first + (i * 1000) / rate));
  return pacingRow("delay node, rate limit", rate, offered, late, times, offerEnd);
}

function pacingRow(who: string, rate: number, offered: number, late: number[], times: number[], offerEnd: number): PacingRow {
  const { p50, p99 } = summarize(Float64Array.from(late));
  const p99Of = (keep: (at: number) => boolean): number => summarize(Float64Array.from(late.filter((_, i) => keep(times[i])))).p99;
  const span = times.length > 1 ? ((times.at(-1) as number) - times[0]) / 1000 : Number.NaN;
  return {
    who, rate, offered, released: times.length, releasedPerSec: times.length > 1 ? (times.length - 1) / span : 0, p50Ms: p50, p99Ms: p99,
    p99WhileOfferedMs: p99Of((at) => at < offerEnd), p99AfterMs: p99Of((at) => at >= offerEnd),
  };
}

/** A row measured several times: the run of median p99, with the range of the runs' p99. */
function medianRow(runs: readonly PacingRow[]): PacingRow {
  const { median, lowest, highest } = medianBy(runs, (r) => r.p99Ms);
  return runs.length > 1 ? { ...median, p99RangeMs: [lowest.p99Ms, highest.p99Ms] } : median;
}

/** The throughput rows: skip mode on both stores, then each rate through the gate (both stores) and the delay node. */
export async function measureThroughput(ctx: ThroughputContext): Promise<{ skip: SkipRow[]; pacing: PacingRow[] }> {
  const skip: SkipRow[] = [];
  for (const store of STORES) {
    ctx.progress(`throughput: skip mode, ${SKIP_MSGS} msgs into a ${store} gate`);
    skip.push(await skipRow(ctx, store));
  }
  const pacing: PacingRow[] = [];
  for (const rate of PACING_RATES) {
    const gateRuns = new Map<string, PacingRow[]>();
    const add = (runs: Map<string, PacingRow[]>, row: PacingRow): void => {
      runs.set(row.who, [...(runs.get(row.who) ?? []), row]);
    };
    for (let run = 1; run <= PACING_RUNS; run++) {
      for (const store of STORES) {
        ctx.progress(`throughput: queue mode at ${rate}/s (${store}), run ${run} of ${PACING_RUNS}`);
        add(gateRuns, await gatePacing(ctx, store, rate));
        ctx.progress(`throughput: queue mode at ${rate}/s (${store}), offered 1×, run ${run} of ${PACING_RUNS}`);
        add(gateRuns, await gatePacing(ctx, store, rate, 1));
      }
    }
    // after the gate's rows: run first, the floor's 30,000 msgs left the gate's next row 2-3× later at its p99 (twice offered, memory)
    const floorRuns = new Map<string, PacingRow[]>();
    for (let run = 1; run <= PACING_RUNS; run++) {
      ctx.progress(`throughput: the floor (a bare in-process pacer) at ${rate}/s, run ${run} of ${PACING_RUNS}`);
      add(floorRuns, await floorPacing(ctx, rate));
      add(floorRuns, await floorPacing(ctx, rate, 1));
    }
    const floors = [...floorRuns.values()].map(medianRow);
    const floorOf = (row: PacingRow): PacingRow | undefined => floors.find((f) => f.who.endsWith("offered 1×") === row.who.endsWith("offered 1×"));
    for (const row of [...gateRuns.values()].map(medianRow)) {
      const floor = floorOf(row);
      pacing.push(floor ? { ...row, p99PerFloor: row.p99Ms / floor.p99Ms } : row);
    }
    pacing.push(...floors);
    if (!WITH_DELAY_NODE) continue;
    ctx.progress(`throughput: delay node at ${rate}/s`);
    pacing.push(await delayPacing(ctx, rate));
  }
  return { skip, pacing };
}
