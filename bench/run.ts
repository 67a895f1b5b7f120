import Redis from "ioredis";
import { Completions } from "./load/completions";
import { measureAdPath } from "./adPath/measureAdPath";
import { measureBursts } from "./burst/measureBursts";
import { campaignProblems } from "./burst/campaign";
import { measureCampaigns } from "./burst/measureCampaigns";
import { YOUNG_GEN_FLAGS, YOUNG_GEN_MB } from "./burst/youngGen";
import { MEASURED } from "./burst/measureBurst";
import { measureCore } from "./core/measureCore";
import { measureClaimInstructions } from "./core/claimInstructions";
import { measureDefer, splitDeferNames } from "./defer/measureDefer";
import { cpuTicks, describeMachine, stolenShare } from "./machine";
import { measureAll } from "./measureAll";
import { nodeRedVersion } from "./nodeRed/embeddedRed";
import { startNodeRed, type NodeRedHost } from "./nodeRed/host";
import { schemaOf } from "./gateScenario";
import { BenchPg } from "./pg/rulesSchema";
import { loadClaimScript } from "./redis/claimScript";
import { endpointOf } from "./redis/endpoint";
import { countKeys, dropKeys, runPrefix } from "./redis/keys";
import { comparisonLines, deferLoadLine, loadLine, machineLine, verdictLines } from "./report/summary";
import { adPathTable } from "./report/adPathTable";
import { burstName, burstTable, historyCostLines, type BurstReport } from "./report/burstTable";
import { campaignTable } from "./report/campaignTable";
import { claimInstructionLines, coreTables } from "./report/coreTable";
import { deferTable } from "./report/deferTable";
import { markdownTable } from "./report/table";
import { pacingTable, skipTable } from "./report/throughputTable";
import { measureThroughput } from "./throughput/measureThroughput";
import { measureTotals } from "./totals/measureTotals";
import { measureStateFile, stateFileTable } from "./stateFile/measureStateFile";
import { measureScale, scaleTable } from "./stateFile/heapPerRecipient";
import { totalsTable } from "./report/totalsTable";
import { scenarios } from "./scenarios";
import { readSettings } from "./settings";
import type { Verdicts } from "./load/verdicts";

function progress(text: string): void {
  process.stderr.write(`[bench] ${text}\n`);
}

/** A table of the run on stdout, after a blank line, its legend and a blank line. */
function printSection(legend: string, table: string): void {
  console.log("");
  console.log(legend);
  console.log("");
  console.log(table);
}

/** What a row must not have: msgs failed open, refused as overloaded, or errors. */
function failures(v: Verdicts): number {
  return v.failOpen + v.errors + v.overloaded;
}

/** A burst besides the reported one (a warm-up, a measured one not the median) is not a row, but what it failed is shown (and fails the run) as a row's would. */
function warmUpFaults(rows: readonly BurstReport[]): string[] {
  return rows.filter((r) => failures(r.warmUp) > 0).map((r) =>
    `the other bursts of ${burstName(r)}: ${r.warmUp.failOpen} fail_open, ${r.warmUp.overloaded} overloaded, ${r.warmUp.errors} errors${r.warmUp.firstError ? ` (${r.warmUp.firstError})` : ""}`);
}

/** The raw run's Redis CPU per call: beside a row's, it shows how far batching can take the gate before Redis itself is the limit. */
function rawCpuNote(rows: readonly BurstReport[]): string {
  const raw = rows.find((r) => r.rawRedisCpuUsPerCall !== undefined)?.rawRedisCpuUsPerCall;
  return raw === undefined ? "" : `, Redis CPU ${raw.toFixed(1)} µs per call`;
}

/** `npm run bench`: one markdown table on stdout; progress and Node-RED warnings on stderr. */
async function main(): Promise<void> {
  const settings = readSettings();
  const { defer, rest: notDefer } = splitDeferNames(settings.only);
  const bursts = !settings.only || settings.only.includes("burst");
  const campaigns = !settings.only || settings.only.includes("campaign");
  const adPath = !settings.only || settings.only.includes("adpath");
  const core = !settings.only || settings.only.includes("core");
  const claimCost = !settings.only || settings.only.includes("claimcost");
  const throughput = !settings.only || settings.only.includes("throughput");
  const totals = !settings.only || settings.only.includes("totals");
  const stateFile = !settings.only || settings.only.includes("statefile");
  const scale = !settings.only || settings.only.includes("scale");
  const rest = notDefer?.filter((name) => name !== "burst" && name !== "campaign" && name !== "adpath" && name !== "core" && name !== "claimcost" && name !== "throughput" && name !== "totals" && name !== "statefile" && name !== "scale");
  // BENCH_SCENARIOS=defer alone runs no main scenario (and prints no main table)
  const list = rest !== undefined && rest.length === 0 ? [] : scenarios(rest);
  const endpoint = endpointOf(settings.redisUrl);
  const prefix = runPrefix();
  // no reconnect loop: an unreachable Redis fails the run instead of holding it open
  const redis = new Redis(settings.redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on("error", (err: Error) => progress(`redis: ${err.message}`));
  let host: NodeRedHost | undefined;
  let completions: Completions | undefined;
  let pg: BenchPg | undefined;
  try {
    // Redis (and PostgreSQL, when a -pg row is asked for) first: fail before starting Node-RED
    const machine = await describeMachine(redis, nodeRedVersion());
    const ticksAtStart = cpuTicks();
    const sha = await loadClaimScript(redis);
    if (list.some((s) => s.rulesSource === "postgres")) {
      pg = await BenchPg.connect(settings.databaseUrl, (err) => progress(`postgres: ${err.message}`));
    }
    const postgres = await pg?.version();
    progress("starting Node-RED");
    host = await startNodeRed();
    completions = Completions.install(host.red);
    const { rows, verdicts, comparisons } = await measureAll(
      { red: host.red, completions, redis, endpoint, sha, settings, prefix, progress, ...(pg ? { pg } : {}) },
      list,
    );
    const deferRows = await measureDefer({ red: host.red, completions, redis, settings, prefix, progress }, defer);
    const burstRows: BurstReport[] = bursts
      ? await measureBursts({ red: host.red, completions, redis, endpoint, sha, settings, prefix, progress })
      : [];
    const campaignRows = campaigns
      ? await measureCampaigns({ red: host.red, completions, redis, endpoint, sha, settings, prefix, progress })
      : [];
    const adRows = adPath ? await measureAdPath({ red: host.red, completions, redis, endpoint, settings, prefix, progress }) : [];
    const coreRows = core ? await measureCore(settings, progress) : undefined;
    const claimCostRows = claimCost ? await measureClaimInstructions(progress) : undefined;
    const throughputRows = throughput ? await measureThroughput({ red: host.red, redisUrl: settings.redisUrl, prefix, progress }) : undefined;
    const totalsRows = totals ? await measureTotals(settings.totalSends, progress) : undefined;
    const stateFileRows = stateFile ? await measureStateFile(progress) : [];
    const scaleRow = scale ? await measureScale(progress) : undefined;

    console.log(machineLine(machine, postgres, stolenShare(ticksAtStart, cpuTicks())));
    if (rows.length > 0) {
      console.log(loadLine(settings));
      console.log("");
      console.log(markdownTable(rows));
      console.log("");
      for (const line of comparisonLines(comparisons)) console.log(line);
      for (const line of verdictLines(verdicts)) console.log(line);
    }
    if (deferRows.length > 0) {
      if (rows.length > 0) console.log("");
      console.log(deferLoadLine(settings));
      console.log("");
      console.log(deferTable(deferRows));
    }
    if (burstRows.length > 0) {
      console.log("");
      console.log(`burst: every msg handed to the gate in one tick (what a split node does), no bound on msgs in flight, over msgs ÷ 2 recipients, after two unmeasured bursts of the same size through the same gate (first burst: the first of them, right after the deploy); `
        + `msgs/s: the median of ${MEASURED} measured bursts after them (each to recipients of its own), its CPU and verdicts beside it; `
        + `cap-config defaults (timeoutMs 50, maxQueued 1,500,000); raw: redis-benchmark -P 1 EVALSHA of one ${settings.burstCaps}-cap claim, the mean of runs right before and right after the row${rawCpuNote(burstRows)}; `
        + "CPU µs/msg: over the drain, this process's (Node-RED, the gate, the bench's tally) and Redis's main thread's (INFO cpu); "
        + `-ss${YOUNG_GEN_MB}: the same rows in a Node started with ${YOUNG_GEN_FLAGS.join(" ")} (a larger young generation, docs/internals.md "Bursts"); `
        + "-hist10: the row before it again with a decision history of 10 per recipient (historySize 10; the default keeps none)");
      console.log("");
      console.log(burstTable(burstRows));
      for (const line of historyCostLines(burstRows)) console.log(line);
      for (const line of warmUpFaults(burstRows)) console.log(line);
      if (burstRows.some((r) => failures(r.verdicts) + failures(r.warmUp) > 0)) process.exitCode = 1;
    }
    if (campaignRows.length > 0) {
      printSection(`campaign: ${settings.campaign.toLocaleString("en-US")} msgs handed to a frequency-cap-gate in one tick (each of ${(settings.campaign / 2).toLocaleString("en-US")} recipients twice, one cap of 1 an hour), `
        + "every cap-config setting at its default (maxQueued, timeoutMs, fail and overload modes), after an unmeasured tenth to other recipients; "
        + "B per waiting msg: the heap the burst took right after the hand-over (a full collection, before the gate began any msg), beyond the msgs themselves, per msg; "
        + "peak heap: sampled every 20 ms from the hand-over to the last verdict, msgs included; raw: redis-benchmark -P 1 EVALSHA of the same one-cap claim right before and right after the row",
      campaignTable(campaignRows));
      for (const row of campaignRows) {
        const problems = campaignProblems(row);
        if (problems.length === 0) continue;
        console.log(`campaign-${row.store}: not capped exactly: ${problems.join("; ")}`);
        process.exitCode = 1;
      }
    }
    if (adRows.length > 0) {
      printSection("ad path: caps ad 3/day ⊂ campaign 10/week ⊂ category 5/hour (per ad_id, campaign_id, category); 50 candidate ads over 5 campaigns "
        + "and 3 categories (58 counters) per check, 10,000 viewers; raw: redis-benchmark -P 1 EVALSHA of the same script with the same counters", adPathTable(adRows));
    }
    if (coreRows) {
      console.log("");
      console.log(`core: claims straight through CapService (no Node-RED), ${100} in flight, 20,000 recipients, Redis ${coreRows.redisVersion} of the bench's own (INFO deltas are this run's); `
        + "rate-limiter-flexible: one RateLimiterRedis per cap, consumed in turn; median of 3 interleaved rounds after a warm-up round of each");
      console.log("");
      console.log(coreTables(coreRows));
      if (coreRows.equal.core.overCap + coreRows.tiered.core.overCap > 0) process.exitCode = 1;
    }
    if (claimCostRows) {
      console.log("");
      for (const line of claimInstructionLines(claimCostRows)) console.log(line);
    }
    if (throughputRows) {
      console.log("");
      console.log("throughput-gate, skip mode: 10,000/s with a burst of 10,000, 50,000 msgs over 10,000 recipients, at most 2,000 in the gate at once");
      console.log("");
      console.log(skipTable(throughputRows.skip));
      console.log("");
      console.log("pacing: twice the asked rate offered for 1 s in 2 ms slices (\"offered 1×\": the asked rate itself); the gate in queue mode (burst 1) releases each held msg at its reserved instant, "
        + "late = actual − release_at (released: the held msgs); the floor, a bare in-process pacer of the bench's own (the same GCRA, one timer, nothing else), likewise; "
        + "the delay node (rate limit, all msgs, none dropped), late = actual − (first + i / rate); at most 4 s to drain; "
        + "\"while offered\": released during the 1 s msgs arrive (taking them in shares the event loop), \"after\": the rest; "
        + "each gate and floor row is the run of median p99 of 3 (every gate run of a rate before the floor's), the lowest and highest p99 beside it; p99 ÷ floor: to the floor offered the same");
      console.log("");
      console.log(pacingTable(throughputRows.pacing));
      if (throughputRows.skip.some((r) => r.failOpen > 0)) process.exitCode = 1;
    }
    if (totalsRows) {
      console.log("");
      console.log(`total caps: one lifetime total of 10,000,000 on one ad, every send to a new recipient, straight through CapService (no Node-RED), Redis ${totalsRows.redisVersion} of the bench's own `
        + "(command stats are this run's; commands inside scripts count); one round trip per send: lua/quota.lua spending 1 from the pool per EVALSHA, no lease; median of 3 interleaved rounds after 4 warm-up rounds of each");
      console.log("");
      console.log(totalsTable(totalsRows));
      if (totalsRows.runs.some((r) => r.admitted !== r.sends)) process.exitCode = 1;
    }
    if (stateFileRows.length > 0) {
      printSection("memory store files: the state file of counters of 3 caps per recipient, saved once (a cap-config saves every 5 s what changed); "
        + "the defer journal of held msgs, compacted once; longest stall: the longest gap between the ticks of a 1 ms timer beside it, what every gate waits meanwhile",
      stateFileTable(stateFileRows));
    }
    if (scaleRow) {
      printSection("memory store at scale: a million recipients of one send under 1 cap, in a store of its own; heap after a full GC, before and after filling it; "
        + "loop delay: monitorEventLoopDelay's max (1 ms resolution) during one save in parts, alone and beside claims of 100 recipients every ms, and as long again with those claims alone",
      scaleTable(scaleRow));
    }
    if (verdicts.some((v) => v.measured.failOpen + v.warmup.failOpen + v.measured.errors + v.warmup.errors > 0)) process.exitCode = 1;
  } finally {
    completions?.uninstall();
    // stops the flows too: the cap-configs' PostgreSQL pools and Redis connections close here
    await host?.stop();
    if (pg) await cleanUpPg(pg, `${schemaOf(prefix)}_`);
    await cleanUp(redis, prefix);
  }
}

/** Drops every schema of this run (each scenario drops its own; this catches an interrupted one) and says how many are left. */
async function cleanUpPg(pg: BenchPg, schemaPrefix: string): Promise<void> {
  try {
    for (const schema of await pg.schemasUnder(schemaPrefix)) await pg.dropSchema(schema);
    const left = (await pg.schemasUnder(schemaPrefix)).length;
    console.log(`postgres schemas left under ${schemaPrefix}*: ${left}`);
    if (left > 0) process.exitCode = 1;
  } catch (err) {
    progress(`could not clean up postgres schemas under ${schemaPrefix}*: ${(err as Error).message}`);
    process.exitCode = 1;
  } finally {
    await pg.end().catch(() => undefined);
  }
}

/** Drops every key of this run and says how many are left (0, or the run fails). */
async function cleanUp(redis: Redis, prefix: string): Promise<void> {
  try {
    await dropKeys(redis, prefix);
    const left = await countKeys(redis, prefix);
    console.log(`redis keys left under ${prefix}*: ${left}`);
    if (left > 0) process.exitCode = 1;
    await redis.quit();
  } catch (err) {
    progress(`could not clean up redis keys under ${prefix}*: ${(err as Error).message}`);
    process.exitCode = 1;
    redis.disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exitCode = 1;
});
