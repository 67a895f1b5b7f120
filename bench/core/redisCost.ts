import type Redis from "ioredis";

/** Redis's own CPU (user + sys, µs) and memory (bytes) from INFO: deltas over a run are that run's cost. */
export async function redisCost(client: Redis): Promise<{ cpuUs: number; memory: number }> {
  const info = await client.info();
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? Number.NaN);
  return { cpuUs: (field("used_cpu_user") + field("used_cpu_sys")) * 1e6, memory: field("used_memory") };
}
