import { cpus } from "node:os";
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
