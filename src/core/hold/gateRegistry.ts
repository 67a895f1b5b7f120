import type Redis from "ioredis";
import type { Cluster } from "ioredis";
import { encodeKeyPart } from "../caps/keys";
import { defineDeferScripts, deferHashTag, deferKeys, checkDeferPrefix } from "../../redis/redisHeldQueue";

type RedisClient = Redis | Cluster;

/**
 * Which gates of a cap-config hold msgs, and whether any instance runs them:
 * the msgs of a gate that runs nowhere (removed from the flow, a disabled
 * tab) are left alone until their deadline, then dropped and reported.
 */
export interface GateRegistry {
  /** these gates run here (call at least every BEAT_MS while they do) */
  beat(gates: readonly string[]): Promise<void>;
  /** gates whose queues may hold msgs and which no instance runs */
  orphans(): Promise<string[]>;
  /** forgets a gate whose queue is empty and which still runs nowhere */
  forget(gate: string): Promise<void>;
}

/** How often a cap-config says which gates it runs, and how long that counts. */
export const BEAT_MS = 10_000;
export const BEAT_TTL_MS = 60_000;

interface GateScripts {
  sendgateDeferGates(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
}

/** `<prefix>:{<prefix>:dq}:gates:<cap-config id>`: gate -> until when an instance said it runs it (Redis TIME). */
export function gateRegistryKey(keyPrefix: string, configId: string): string {
  checkDeferPrefix(keyPrefix);
  return `${keyPrefix}:${deferHashTag(keyPrefix)}:gates:${encodeKeyPart(configId)}`;
}

/** The registry shared by every instance on one Redis (lua/defer_gates.lua). */
export class RedisGateRegistry implements GateRegistry {
  private readonly key: string;

  constructor(private readonly client: RedisClient, private readonly keyPrefix: string, private readonly configId: string, private readonly ttlMs = BEAT_TTL_MS) {
    this.key = gateRegistryKey(keyPrefix, configId);
    defineDeferScripts(client);
  }

  async beat(gates: readonly string[]): Promise<void> {
    if (gates.length === 0) return;
    await this.scripts.sendgateDeferGates(1, this.key, "beat", this.ttlMs, ...gates);
  }

  async orphans(): Promise<string[]> {
    return (await this.scripts.sendgateDeferGates(1, this.key, "orphans")) as string[];
  }

  async forget(gate: string): Promise<void> {
    const keys = deferKeys({ keyPrefix: this.keyPrefix, configId: this.configId, gate });
    await this.scripts.sendgateDeferGates(3, this.key, keys.due, keys.lease, "forget", gate);
  }

  private get scripts(): GateScripts {
    return this.client as unknown as GateScripts;
  }
}

/** One process (the memory store): a gate runs nowhere when it is not registered here. */
export class LocalGateRegistry implements GateRegistry {
  private running = new Set<string>();

  constructor(private readonly gatesHolding: () => string[]) {}

  async beat(gates: readonly string[]): Promise<void> {
    this.running = new Set(gates);
  }

  async orphans(): Promise<string[]> {
    return this.gatesHolding().filter((gate) => !this.running.has(gate));
  }

  async forget(): Promise<void> {
    return undefined;
  }
}
