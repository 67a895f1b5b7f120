import type { Node } from "node-red";
import type Redis from "ioredis";
import { luaScript } from "../../src/redis/scripts";
import type { Completions } from "../load/completions";
import { drive, type MsgFeed, type RunResult } from "../load/driver";
import { noVerdicts, tally, type Verdicts } from "../load/verdicts";
import type { BenchMsg } from "../load/msgSource";
import { seededRandom } from "../load/random";
import { collectGarbage } from "../../test/support/gc";
import { deployGate } from "../nodeRed/deploy";
import type { EmbeddedRed } from "../nodeRed/embeddedRed";
import type { RedisEndpoint } from "../redis/endpoint";
import { dropKeys } from "../redis/keys";
import { redisBenchmarkEvalsha } from "../redis/rawEvalsha";
import type { BenchSettings } from "../settings";
import { medianBy, summarize, type LatencySummary } from "../stats";
import { adFlow, candidates } from "./adFlow";

export interface AdPathRow {
  path: string;
  /** what was measured */
  how: string;
  perSec: number;
  p50Ms?: number;
  p99Ms?: number;
  /** the lowest and highest p99 of the runs whose median p99Ms is */
  p99RangeMs?: readonly [number, number];
  /** the check's p99 ÷ the p99 of the bare script call made in the same loop on the same connection (median of the runs) */
  p99OverFloor?: number;
  /** this process's CPU (user + system) per request while the row ran: Node-RED, the gate and the load generator */
  nodeCpuUs?: number;
  /** the lowest and highest CPU per request of the runs whose median nodeCpuUs is */
  nodeCpuRangeUs?: readonly [number, number];
  /** redis-benchmark -P 1 of the very script call this row makes */
  rawPerSec: number;
  failOpen: number;
}

export interface AdPathContext {
  red: EmbeddedRed;
  completions: Completions;
  redis: Redis;
  endpoint: RedisEndpoint;
  settings: BenchSettings;
  prefix: string;
  progress: (text: string) => void;
}

const CANDIDATES = 50;
/** runs of each check row: the row is their median, with the lowest and highest beside it */
const RUNS = 3;
const RAND = "__rand_int__";

/** Msgs to random viewers (seeded), each made by `shape` from its id, the viewer and a random draw. */
function feed(tag: string, viewers: number, seed: number, shape: (msg: BenchMsg, draw: () => number) => BenchMsg): MsgFeed {
  const random = seededRandom(seed);
  let issued = 0;
  return {
    next: () => {
      const id = `${tag}-${issued++}`;
      return shape({ _msgid: id, messageId: id, recipient: `v${Math.floor(random() * viewers)}`, channel: "in_app", payload: "" }, random);
    },
  };
}

/** A bid request of one viewer over the same 50 candidate ads. */
function checkSource(tag: string, viewers: number, seed: number): MsgFeed {
  const ads = candidates(CANDIDATES);
  return feed(tag, viewers, seed, (msg) => ({ ...msg, payload: "bid", candidates: ads }));
}

/** An impression event of one of the 50 ads to one viewer. */
function impressionSource(tag: string, viewers: number, seed: number): MsgFeed {
  const ads = candidates(CANDIDATES);
  return feed(tag, viewers, seed, (msg, draw) => ({ ...msg, payload: "impression", attributes: ads[Math.floor(draw() * ads.length)] }));
}

/** Starts request `slot`; calls `done` when it is answered. */
type Start = (slot: number, done: () => void) => void;

/** What went wrong in a row's runs: a check's verdicts, the bare calls that failed. */
interface Outcomes {
  verdicts: Verdicts;
  bareErrors: number;
  firstBareError?: string;
}

/**
 * Open loop: `rate` requests a second for `count` requests, each started on
 * its own schedule whatever the ones before are doing; latency is start to done.
 */
async function openLoop(start: Start, rate: number, count: number): Promise<Float64Array> {
  const latencies = new Float64Array(count);
  let completed = 0;
  const began = performance.now();
  await new Promise<void>((resolve) => {
    let sent = 0;
    const tick = (): void => {
      const due = Math.min(count, Math.floor(((performance.now() - began) / 1000) * rate) + 1);
      while (sent < due) {
        const slot = sent++;
        const at = performance.now();
        start(slot, () => {
          latencies[slot] = performance.now() - at;
          if (++completed === count) resolve();
        });
      }
      if (sent < count) setTimeout(tick, 1);
    };
    tick();
  });
  return latencies;
}

/** A check msg into the gate, done when the gate's done() is heard. */
function gateStart(gate: Node, completions: Completions, feed: MsgFeed, verdicts: Verdicts): Start {
  return (_slot, done) => {
    const msg = feed.next();
    completions.expect(msg._msgid, (event) => {
      tally(verdicts, event);
      done();
    });
    gate.receive(msg);
  };
}

/** One run of the paired open loop: each request's latency, the check's and the bare call's. */
interface PairedRun {
  check: Float64Array;
  bare: Float64Array;
}

/**
 * Each tick of one open loop starts a check and, beside it, the bare script
 * call the check makes, so both meet the same loop turns, collections and
 * queue at Redis: the bare call's tail is the floor the check's is judged
 * against. The gate begins a msg a few microtasks after receive(), so the
 * bare call is written first and the check's waits behind it at Redis, never
 * the other way round. Each is timed from its own start.
 */
async function pairedOpenLoop(check: Start, bare: Start, rate: number, count: number): Promise<PairedRun> {
  const run: PairedRun = { check: new Float64Array(count), bare: new Float64Array(count) };
  await openLoop((slot, done) => {
    let left = 2;
    const timed = (into: Float64Array, at: number) => (): void => {
      into[slot] = performance.now() - at;
      if (--left === 0) done();
    };
    check(slot, timed(run.check, performance.now()));
    bare(slot, timed(run.bare, performance.now()));
  }, rate, count);
  return run;
}

/** The median of some numbers, with the lowest and highest beside it. */
function medianOf(values: readonly number[]): { median: number; range: [number, number] } {
  const { median, lowest, highest } = medianBy(values, (v) => v);
  return { median, range: [lowest, highest] };
}

/** The Redis connection a cap-config's store sends on, found through the node the runtime made of it. */
function storeClient(red: EmbeddedRed, configId: string): Redis {
  const config = red.nodes.getNode(configId) as unknown as { service?: { store: { client?: Redis } } } | null;
  const client = config?.service?.store.client;
  if (!client) throw new Error(`cap-config ${configId} has no Redis store client`);
  return client;
}

/** The EVALSHA arguments of the script call a row makes (as the store sends them), with `user` in the key (and as the member). */
function rawArgs(script: "inspect" | "record", sha: string, keyPrefix: string, user: string): string[] {
  const key = `${keyPrefix}:{default|v${user}}:c`;
  const ads = candidates(CANDIDATES);
  // inspect.lua: the three caps' limits once, then the 58 counters, each with its cap, in one argument (as the store sends them)
  const fields = [...new Set([
    ...ads.map((a) => `ad-daily:${a.ad_id}|1`),
    ...ads.map((a) => `campaign-weekly:${a.campaign_id}|2`),
    ...ads.map((a) => `category-hourly:${a.category}|3`),
  ])].flatMap((entry) => entry.split("|"));
  // per limit: window ms, max, period start, reset, shadow (0: enforced)
  const limits = ["3", "86400000", "3", "0", "0", "0", "604800000", "10", "0", "0", "0", "3600000", "5", "0", "0", "0"];
  return script === "inspect"
    ? [sha, "1", key, ...limits, pairs(fields).join(",")]
    : [sha, "1", key, ...limits, `${user},ad-daily:ad7,1,campaign-weekly:c2,2,category-hourly:news,3`];
}

/** redis-benchmark -P 1 on the script call a row makes, with random users (and members). */
async function rawRate(ctx: AdPathContext, script: "inspect" | "record", keyPrefix: string): Promise<number> {
  const sha = await ctx.redis.script("LOAD", luaScript(script)) as string;
  try {
    return await redisBenchmarkEvalsha(ctx.endpoint, { args: rawArgs(script, sha, keyPrefix, RAND), requests: ctx.settings.rawRequests, clients: ctx.settings.rawClients, keyspace: 10_000 });
  } finally {
    await dropKeys(ctx.redis, keyPrefix);
  }
}

/**
 * The floor under the check's latency on this box: the same inspect.lua call
 * the store makes, on the same viewers' counters (random ones; the script only
 * reads), straight from `client` with no gate around it.
 */
async function bareInspect(ctx: AdPathContext, client: Redis, keyPrefix: string, outcomes: Outcomes): Promise<Start> {
  const sha = await client.script("LOAD", luaScript("inspect")) as string;
  const random = seededRandom(ctx.settings.seed + 2);
  // made once: only the viewer's key changes from call to call
  const [, numKeys, , ...rest] = rawArgs("inspect", sha, keyPrefix, "");
  return (_slot, done) => {
    client.evalsha(sha, numKeys, `${keyPrefix}:{default|v${Math.floor(random() * 10_000)}}:c`, ...rest).then(done, (err: Error) => {
      outcomes.bareErrors++;
      outcomes.firstBareError ??= err.message;
      done();
    });
  };
}

/** A run, and the CPU this process spent on it (µs, user + system). */
async function withCpu<T>(run: () => Promise<T>): Promise<T & { cpuUs: number }> {
  const before = process.cpuUsage();
  const result = await run();
  const spent = process.cpuUsage(before);
  return { ...result, cpuUs: spent.user + spent.system };
}

/** "a,1,b,2" from [a, 1, b, 2]: each counter's field and limit index, as lua/inspect.lua reads them */
function pairs(flat: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < flat.length; i += 2) out.push(`${flat[i]},${flat[i + 1]}`);
  return out;
}

/**
 * The ad-serving rows (SPEC §5): `check` of 50 candidates at 1,000 requests/s
 * (open loop: p50 / p99, beside the bare inspect.lua call made in the same
 * loop on the store's own connection) and as fast as it goes (64 in flight:
 * the Node CPU per check), each the median of RUNS runs; and `record` of
 * impressions as fast as it goes; each beside the raw rate of its script.
 */
export async function measureAdPath(ctx: AdPathContext): Promise<AdPathRow[]> {
  const { settings, prefix, progress } = ctx;
  const keyPrefix = `${prefix}-ad`;
  const flow = adFlow("ad", settings.redisUrl, keyPrefix);
  const { gate: checker } = await deployGate(ctx.red, flow);
  const recorder = ctx.red.nodes.getNode(flow.recorderId) as Node;
  const viewers = 10_000;
  const rows: AdPathRow[] = [];
  try {
    progress("ad path: recording impressions, 64 in flight");
    const impressions = impressionSource(`${keyPrefix}-i`, viewers, settings.seed);
    await drive(recorder, ctx.completions, impressions, { count: Math.min(5_000, settings.msgs), concurrency: 64 });
    const record = await withCpu(() => drive(recorder, ctx.completions, impressions, { count: settings.msgs, concurrency: 64 }));
    const recordRaw = await rawRate(ctx, "record", `${prefix}-ad-raw-record`);
    rows.push({ path: "record (3 caps)", how: "64 in flight", perSec: record.msgs / (record.elapsedMs / 1000), nodeCpuUs: record.cpuUs / record.msgs, rawPerSec: recordRaw, failOpen: record.verdicts.failOpen });
    // more in flight, more per batch: Redis answers many records per script call
    const wide = await withCpu(() => drive(recorder, ctx.completions, impressions, { count: settings.msgs, concurrency: 1024 }));
    rows.push({ path: "record (3 caps)", how: "1,024 in flight", perSec: wide.msgs / (wide.elapsedMs / 1000), nodeCpuUs: wide.cpuUs / wide.msgs, rawPerSec: recordRaw, failOpen: wide.verdicts.failOpen });
    // impressions arrive in bulk (an MQTT backlog, a batch from the ad server): the same count, all at once
    const burst = await withCpu(() => drive(recorder, ctx.completions, impressions, { count: settings.msgs, concurrency: settings.msgs }));
    rows.push({ path: "record (3 caps)", how: `${settings.msgs.toLocaleString("en-US")} at once (burst)`, perSec: burst.msgs / (burst.elapsedMs / 1000), nodeCpuUs: burst.cpuUs / burst.msgs, rawPerSec: recordRaw, failOpen: burst.verdicts.failOpen });

    progress("ad path: check of 50 candidates at 1,000 requests/s, the bare inspect.lua call beside each");
    const checks = checkSource(`${keyPrefix}-c`, viewers, settings.seed + 1);
    // the record burst's garbage is not the check's to collect
    collectGarbage();
    const outcomes: Outcomes = { verdicts: noVerdicts(), bareErrors: 0 };
    const start = gateStart(checker, ctx.completions, checks, outcomes.verdicts);
    const bare = await bareInspect(ctx, storeClient(ctx.red, flow.configId), keyPrefix, outcomes);
    await pairedOpenLoop(start, bare, 1_000, 1_000);
    const paired: { check: LatencySummary; bare: LatencySummary }[] = [];
    for (let run = 0; run < RUNS; run++) {
      const { check, bare: floor } = await pairedOpenLoop(start, bare, 1_000, 5_000);
      paired.push({ check: summarize(check), bare: summarize(floor) });
    }
    if (outcomes.verdicts.errors > 0) throw new Error(`ad path: ${outcomes.verdicts.errors} checks failed: ${outcomes.verdicts.firstError ?? ""}`);
    if (outcomes.bareErrors > 0) throw new Error(`ad path: ${outcomes.bareErrors} bare inspect.lua calls failed: ${outcomes.firstBareError ?? ""}`);
    const checkRaw = await rawRate(ctx, "inspect", `${prefix}-ad-raw-check`);
    const checkP99 = medianOf(paired.map((r) => r.check.p99));
    const bareP99 = medianOf(paired.map((r) => r.bare.p99));
    const how = "1,000 requests/s, open loop";
    rows.push({
      path: "check (50 candidates)", how, perSec: 1_000, p50Ms: medianOf(paired.map((r) => r.check.p50)).median,
      p99Ms: checkP99.median, p99RangeMs: checkP99.range, p99OverFloor: medianOf(paired.map((r) => r.check.p99 / r.bare.p99)).median,
      rawPerSec: checkRaw, failOpen: outcomes.verdicts.failOpen,
    });
    rows.push({
      path: "bare inspect.lua, same loop and connection", how, perSec: 1_000, p50Ms: medianOf(paired.map((r) => r.bare.p50)).median,
      p99Ms: bareP99.median, p99RangeMs: bareP99.range, rawPerSec: checkRaw, failOpen: 0,
    });
    progress("ad path: check of 50 candidates, as fast as it goes");
    const flats: (RunResult & { cpuUs: number })[] = [];
    for (let run = 0; run < RUNS; run++) {
      collectGarbage();
      flats.push(await withCpu(() => drive(checker, ctx.completions, checks, { count: Math.min(settings.msgs, 20_000), concurrency: 64 })));
    }
    const failed = flats.find((f) => f.verdicts.errors > 0);
    if (failed) throw new Error(`ad path: ${failed.verdicts.errors} checks failed: ${failed.verdicts.firstError ?? ""}`);
    const cpuPerCheck = (f: RunResult & { cpuUs: number }): number => f.cpuUs / f.msgs;
    const { median: flat, lowest, highest } = medianBy(flats, cpuPerCheck);
    const flatLatency = summarize(flat.latenciesMs);
    rows.push({
      path: "check (50 candidates)", how: "64 in flight (max rate)", perSec: flat.msgs / (flat.elapsedMs / 1000), p50Ms: flatLatency.p50, p99Ms: flatLatency.p99,
      nodeCpuUs: cpuPerCheck(flat), nodeCpuRangeUs: [cpuPerCheck(lowest), cpuPerCheck(highest)], rawPerSec: checkRaw,
      failOpen: flats.reduce((sum, f) => sum + f.verdicts.failOpen, 0),
    });
  } finally {
    await dropKeys(ctx.redis, keyPrefix);
  }
  return rows;
}
