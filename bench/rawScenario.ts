import type Redis from "ioredis";
import type { RedisEndpoint } from "./redis/endpoint";
import { countKeys, dropKeys } from "./redis/keys";
import { probeClaim, rawClaimArgs, redisBenchmarkEvalsha } from "./redis/rawEvalsha";
import { redisCpuSeconds } from "./redis/redisCpu";
import type { Scenario } from "./scenarios";
import type { BenchSettings } from "./settings";

export interface RawResult {
  perSec: number;
  /** keys the run left, before they were dropped: proof the script wrote */
  keysWritten: number;
  /** Redis's own CPU per claim call while redis-benchmark ran, µs */
  redisCpuUsPerCall: number;
}

/** redis-benchmark on EVALSHA of claim.lua with the scenario's caps, under `keyPrefix`, which it then drops. */
export async function runRawScenario(
  client: Redis,
  endpoint: RedisEndpoint,
  sha: string,
  scenario: Scenario,
  settings: BenchSettings,
  keyPrefix: string,
): Promise<RawResult> {
  const args = rawClaimArgs(sha, keyPrefix, scenario.rules);
  try {
    await probeClaim(client, args, scenario.rules.length);
    const cpuBefore = await redisCpuSeconds(client);
    const perSec = await redisBenchmarkEvalsha(endpoint, {
      args,
      requests: settings.rawRequests,
      clients: settings.rawClients,
      keyspace: settings.rawKeyspace,
    });
    const redisCpuUsPerCall = ((await redisCpuSeconds(client)) - cpuBefore) * 1e6 / settings.rawRequests;
    const keysWritten = await countKeys(client, keyPrefix);
    if (keysWritten === 0) throw new Error("redis-benchmark ran but claim.lua wrote no key");
    return { perSec, keysWritten, redisCpuUsPerCall };
  } finally {
    await dropKeys(client, keyPrefix);
  }
}
