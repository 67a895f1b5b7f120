import Redis from "ioredis";
import { Completions } from "./load/completions";
import { describeMachine } from "./machine";
import { measureAll } from "./measureAll";
import { nodeRedVersion } from "./nodeRed/embeddedRed";
import { startNodeRed, type NodeRedHost } from "./nodeRed/host";
import { loadClaimScript } from "./redis/claimScript";
import { endpointOf } from "./redis/endpoint";
import { countKeys, dropKeys, runPrefix } from "./redis/keys";
import { loadLine, machineLine, verdictLines } from "./report/summary";
import { markdownTable } from "./report/table";
import { scenarios } from "./scenarios";
import { readSettings } from "./settings";

function progress(text: string): void {
  process.stderr.write(`[bench] ${text}\n`);
}

/** `npm run bench`: one markdown table on stdout; progress and Node-RED warnings on stderr. */
async function main(): Promise<void> {
  const settings = readSettings();
  const list = scenarios(settings.only);
  const endpoint = endpointOf(settings.redisUrl);
  const prefix = runPrefix();
  // no reconnect loop: an unreachable Redis fails the run instead of holding it open
  const redis = new Redis(settings.redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on("error", (err: Error) => progress(`redis: ${err.message}`));
  let host: NodeRedHost | undefined;
  let completions: Completions | undefined;
  try {
    // Redis first: without it there is nothing to compare, so fail before starting Node-RED
    const machine = await describeMachine(redis, nodeRedVersion());
    const sha = await loadClaimScript(redis);
    progress("starting Node-RED");
    host = await startNodeRed();
    completions = Completions.install(host.red);
    const { rows, verdicts } = await measureAll({ red: host.red, completions, redis, endpoint, sha, settings, prefix, progress }, list);

    console.log(machineLine(machine));
    console.log(loadLine(settings));
    console.log("");
    console.log(markdownTable(rows));
    console.log("");
    for (const line of verdictLines(verdicts)) console.log(line);
    if (verdicts.some((v) => v.measured.failOpen + v.warmup.failOpen + v.measured.errors + v.warmup.errors > 0)) process.exitCode = 1;
  } finally {
    completions?.uninstall();
    await host?.stop();
    await cleanUp(redis, prefix);
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
