import Redis from "ioredis";
import { totalCounterKey } from "../../src/core/caps/keys";
import { parseSend } from "../../src/core/send";
import { luaScript } from "../../src/redis/scripts";
import { OwnRedis } from "../../test/support/redisServer";
import { createCapService } from "../../src/service/createCapService";
import { medianBy } from "../stats";

/** One way of claiming sends against one hot total cap. */
export interface TotalsRun {
  name: string;
  inFlight: number | "all";
  sends: number;
  admitted: number;
  perSec: number;
  /** script calls (EVALSHA) Redis answered per 1,000 admitted sends */
  callsPer1000: number;
  /** every command Redis ran (those inside scripts included) per 1,000 admitted sends */
  commandsPer1000: number;
  /** this Node process's CPU (user + system) per claim, µs: the Redis server is another process */
  nodeCpuUsPerClaim: number;
}

export interface TotalsRows {
  redisVersion: string;
  runs: TotalsRun[];
}

const MAX = 10_000_000;
const ROUNDS = 3;
const WARM_ROUNDS = 4;

const AD = { ad_id: "hot-ad" };

async function commandCounts(redis: Redis): Promise<{ evalsha: number; all: number }> {
  const info = await redis.info("commandstats");
  let all = 0;
  let evalsha = 0;
  for (const m of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) {
    const calls = Number(m[2]);
    // the INFO calls of the measurement itself are not the run's
    if (m[1] === "info") continue;
    all += calls;
    if (m[1] === "evalsha" || m[1] === "eval") evalsha += calls;
  }
  return { evalsha, all };
}

/** `sends` claims, `inFlight` at once (or every one handed over at once), through `claim`; counted in Redis's own command stats. */
async function measure(redis: Redis, name: string, sends: number, inFlight: number | "all", claim: (i: number) => Promise<boolean>): Promise<TotalsRun> {
  await redis.config("RESETSTAT");
  const before = await commandCounts(redis);
  let admitted = 0;
  let next = 0;
  const cpu = process.cpuUsage();
  const began = performance.now();
  if (inFlight === "all") {
    const answers = await Promise.all(Array.from({ length: sends }, (_, i) => claim(i)));
    admitted = answers.filter(Boolean).length;
  } else {
    await Promise.all(Array.from({ length: inFlight }, async () => {
      while (next < sends) if (await claim(next++)) admitted++;
    }));
  }
  const seconds = (performance.now() - began) / 1000;
  const used = process.cpuUsage(cpu);
  const after = await commandCounts(redis);
  const per1000 = (n: number): number => (n / Math.max(1, admitted)) * 1000;
  return { name, inFlight, sends, admitted, perSec: sends / seconds, callsPer1000: per1000(after.evalsha - before.evalsha), commandsPer1000: per1000(after.all - before.all), nodeCpuUsPerClaim: (used.user + used.system) / sends };
}

/** The gate's core with one total cap: slots reserved from leased blocks, spends reported in one call per tick. */
async function leased(url: string, redis: Redis, tag: string, sends: number, inFlight: number | "all"): Promise<TotalsRun> {
  const service = createCapService({
    store: "redis", redisUrl: url, keyPrefix: `lease-${tag}`, timeoutMs: 5000, failMode: "closed",
    rules: [{ id: "ad-total", scope: "global", counts: "total", per: ["ad_id"], max_count: MAX, window_seconds: 86_400, window_type: "lifetime" }],
  }, {}, { warn: () => undefined, error: () => undefined });
  try {
    const sendRules = service.sendRules;
    return await measure(redis, "leased blocks (the gate's core)", sends, inFlight, async (i) => {
      const decision = await service.engine.claim(parseSend({ recipient: `u${i}`, channel: "push", messageId: `${tag}-${i}`, attributes: AD }, sendRules));
      if (decision.kind === "fail_open") throw decision.error;
      return decision.kind === "allowed";
    });
  } finally {
    await service.close();
  }
}

/** The same counter claimed one round trip per send: the script spends 1 from the pool each call (no lease), as a plain check-and-increment would. */
async function perSend(redis: Redis, tag: string, sends: number, inFlight: number | "all"): Promise<TotalsRun> {
  const sha = String(await redis.script("LOAD", luaScript("quota")));
  const key = totalCounterKey(`each-${tag}`, "default", "ad-total", ["hot-ad"]);
  return measure(redis, "one round trip per send", sends, inFlight, async () => {
    // lua/quota.lua's argument order: a spend of 1 with no lease (taken from the pool or refused), nothing else
    const reply = await redis.evalsha(sha, 2, key, `${key}:r`, "", 10_000, MAX, 0, 0, 0, 1, 0, "", "", -1, 0) as number[];
    return Number(reply[1]) === 1;
  });
}

/**
 * Issue 17's benchmark: claims/s on one hot total cap with leased blocks beside
 * the same cap claimed one round trip per send, and the Redis calls and
 * commands per 1,000 admitted sends, on a redis-server of the bench's own (so
 * its command stats are this run's).
 */
export async function measureTotals(sends: number, progress: (text: string) => void): Promise<TotalsRows> {
  const server = new OwnRedis();
  await server.start();
  const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  try {
    const redisVersion = /redis_version:([\d.]+)/.exec(await redis.info("server"))?.[1] ?? "?";
    const runs: TotalsRun[] = [];
    // rounds of each, not measured, until the JIT and the heap have settled: the leased claims keep getting
    // faster over their first ~300,000 (a long-running Node-RED is past that), the per-send calls over fewer
    for (let round = 0; round < WARM_ROUNDS; round++) {
      await leased(server.url, redis, `warm${round}`, sends, round % 2 === 0 ? 100 : 1000);
      await perSend(redis, `warm${round}`, sends, 1000);
    }
    for (const inFlight of [100, 1000, "all"] as const) {
      progress(`totals: ${sends} claims on one hot total cap, ${inFlight} in flight, leased and one round trip per send, ${ROUNDS} interleaved rounds`);
      const lease: TotalsRun[] = [];
      const each: TotalsRun[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        lease.push(await leased(server.url, redis, `l${inFlight}-${round}`, sends, inFlight));
        each.push(await perSend(redis, `e${inFlight}-${round}`, sends, inFlight));
      }
      runs.push(medianBy(lease, (r) => r.perSec).median, medianBy(each, (r) => r.perSec).median);
    }
    return { redisVersion, runs };
  } finally {
    redis.disconnect();
    await server.stop();
    server.cleanUp();
  }
}
