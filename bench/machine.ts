import { cpus } from "node:os";
import { readFileSync } from "node:fs";
import type Redis from "ioredis";

export interface Machine {
  cpuCount: number;
  cpuModel: string;
  node: string;
  nodeRed: string;
  redis: string;
}

export async function describeMachine(redis: Redis, nodeRedVersion: string): Promise<Machine> {
  const info = await redis.info("server");
  const list = cpus();
  return {
    cpuCount: list.length,
    cpuModel: list[0]?.model.trim() ?? "unknown",
    node: process.version,
    nodeRed: nodeRedVersion,
    redis: /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? "unknown",
  };
}

/** The CPU time counters of /proc/stat's first line (all CPUs, in ticks): their total and the part the hypervisor stole. */
export interface CpuTicks {
  total: number;
  steal: number;
}

/** Read now; undefined where there is no /proc/stat (not Linux). */
export function cpuTicks(): CpuTicks | undefined {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
    // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest time is counted in user already)
    const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
    if (fields.length < 8 || fields.some((f) => !Number.isFinite(f))) return undefined;
    return { total: fields.reduce((a, b) => a + b, 0), steal: fields[7] };
  } catch {
    return undefined;
  }
}

/**
 * The share of CPU time the hypervisor took between two readings: on a
 * shared virtual machine, time this process was ready to run and did not (a
 * p99 latency on such a box includes it).
 */
export function stolenShare(from: CpuTicks | undefined, to: CpuTicks | undefined): number | undefined {
  if (!from || !to || to.total <= from.total) return undefined;
  return (to.steal - from.steal) / (to.total - from.total);
}
