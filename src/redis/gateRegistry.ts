import type Redis from "ioredis";
import type { Cluster } from "ioredis";
import { encodeKeyPart } from "../core/caps/keys";
import { BEAT_TTL_MS, type GateRegistry } from "../core/hold/gateRegistry";
import { deferHashTag, deferKeys, checkDeferPrefix } from "./redisHeldQueue";
import { withScripts } from "./scripts";

type RedisClient = Redis | Cluster;

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
    withScripts(client);
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

  async known(): Promise<string[]> {
    return this.client.zrange(this.key, 0, -1);
  }

  private get scripts(): GateScripts {
    return this.client as unknown as GateScripts;
  }
}
