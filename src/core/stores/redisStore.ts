import Redis, { Cluster, type RedisOptions } from "ioredis";
import type {
  AdmissionStore, ClaimOutcome, CounterOutcome, CounterSpec, ReleaseSpec, StoreState,
  SuppressionCheck, SuppressionOutcome, SuppressionWrite,
} from "./admissionStore";
import { StateHolder } from "./stateEmitter";
import { luaScript } from "./luaScripts";
import { clusterSeeds, quitRedis } from "./redisConnection";
import { StoreUnavailableError } from "../errors";

type RedisClient = Redis | Cluster;

/** The scripts this store calls by SHA (ioredis defineCommand: EVALSHA, EVAL once on NOSCRIPT). */
interface ScriptCommands {
  sendgateClaim(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number[]>;
  sendgateUsage(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number[]>;
  sendgateRecord(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number[]>;
  sendgateRelease(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number>;
  sendgateSuppression(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<[number, string | number, string | number]>;
}

/** Bulk writes go out in slices, so a 10,000-entry import never builds one giant batch. */
const WRITE_SLICE = 1000;

export interface RedisStoreOptions {
  url?: string;
  /** cluster seed nodes, `host:port` */
  clusterNodes?: string[];
  password?: string;
  /** how long the first connection may take before sends are judged without it */
  connectGraceMs?: number;
  onError?: (err: Error) => void;
}

const NEVER_FREES = -2;

function connectionOptions(password: string | undefined): RedisOptions {
  return {
    ...(password ? { password } : {}),
    // a send must not wait behind reconnects: fail it and let the fail mode decide
    maxRetriesPerRequest: 0,
    enableOfflineQueue: true,
    connectTimeout: 2000,
    retryStrategy: (times: number) => Math.min(50 * times, 1000),
  };
}

function createClient(options: RedisStoreOptions): RedisClient {
  if (options.clusterNodes && options.clusterNodes.length > 0) {
    return new Cluster(clusterSeeds(options.clusterNodes), {
      redisOptions: connectionOptions(options.password),
      clusterRetryStrategy: (times: number) => Math.min(100 * times, 2000),
      enableOfflineQueue: true,
    });
  }
  return new Redis(options.url ?? "redis://127.0.0.1:6379", connectionOptions(options.password));
}

export class RedisStore implements AdmissionStore {
  readonly kind: "redis" | "redis-cluster";
  readonly remote = true;
  readonly client: RedisClient;
  private readonly stateHolder = new StateHolder("connecting");
  private readonly firstReady: Promise<void>;
  private readonly connectGraceMs: number;
  private everReady = false;
  private closing = false;

  constructor(options: RedisStoreOptions = {}) {
    this.kind = options.clusterNodes && options.clusterNodes.length > 0 ? "redis-cluster" : "redis";
    this.connectGraceMs = options.connectGraceMs ?? 3000;
    this.client = createClient(options);
    this.client.defineCommand("sendgateClaim", { lua: luaScript("claim") });
    this.client.defineCommand("sendgateRecord", { lua: luaScript("record") });
    this.client.defineCommand("sendgateUsage", { lua: luaScript("usage") });
    this.client.defineCommand("sendgateRelease", { lua: luaScript("release") });
    this.client.defineCommand("sendgateSuppression", { lua: luaScript("suppression") });
    this.firstReady = new Promise((resolve) => this.client.once("ready", () => resolve()));
    this.client.on("ready", () => {
      this.everReady = true;
      this.stateHolder.set("ready");
    });
    const down = (): void => {
      if (!this.closing) this.stateHolder.set(this.everReady ? "down" : "connecting");
    };
    this.client.on("close", down);
    this.client.on("reconnecting", down);
    this.client.on("error", (err: Error) => options.onError?.(err));
  }

  async claim(member: string, specs: readonly CounterSpec[]): Promise<ClaimOutcome> {
    await this.usable();
    const args: (string | number)[] = specs.map((s) => s.key);
    args.push(member);
    for (const s of specs) args.push(s.windowMs, s.max, s.resetAt ?? 0);
    const reply = await this.scripts.sendgateClaim(specs.length, ...args);
    return parseClaimReply(reply, specs.length);
  }

  async inspect(specs: readonly CounterSpec[]): Promise<{ count: number; retryAfterMs: number | null; full: boolean }[]> {
    if (specs.length === 0) return [];
    await this.usable();
    const reply = await this.scripts.sendgateUsage(specs.length, ...specs.map((s) => s.key), ...specs.flatMap((s) => [s.windowMs, s.max, s.resetAt ?? 0]));
    return specs.map((_, i) => {
      const retry = Number(reply[2 + i * 2]);
      return { count: Number(reply[1 + i * 2]), retryAfterMs: retry >= 0 ? retry : null, full: retry !== -1 };
    });
  }

  async record(member: string, specs: readonly CounterSpec[]): Promise<number[]> {
    await this.usable();
    const reply = await this.scripts.sendgateRecord(specs.length, ...specs.map((s) => s.key), member, ...specs.flatMap((s) => [s.windowMs, s.resetAt ?? 0]));
    return reply.slice(1).map(Number);
  }

  async release(member: string, claims: readonly ReleaseSpec[]): Promise<number> {
    if (claims.length === 0) return 0;
    await this.usable();
    return Number(await this.scripts.sendgateRelease(claims.length, ...claims.map((c) => c.key), member, ...claims.map((c) => c.kind)));
  }

  async checkSuppression(check: SuppressionCheck): Promise<SuppressionOutcome> {
    await this.usable();
    const keys = check.markKey === undefined ? [check.listKey] : [check.listKey, check.markKey];
    const [kind, a, b] = await this.scripts.sendgateSuppression(keys.length, ...keys, check.channel, check.member, check.markWindowMs);
    if (kind === 1) return { kind: "listed", field: String(a), entry: String(b) };
    if (kind === 2) return { kind: "duplicate", firstMember: String(a), retryAfterMs: Math.max(0, Number(b)) };
    const mark = Number(a);
    return { kind: "clear", mark: mark === 1 ? "new" : mark === 2 ? "held" : "none" };
  }

  async writeSuppressions(writes: readonly SuppressionWrite[]): Promise<void> {
    await this.usable();
    for (let from = 0; from < writes.length; from += WRITE_SLICE) {
      const slice = writes.slice(from, from + WRITE_SLICE);
      await Promise.all(slice.flatMap((w) => w.entry === undefined
        ? [this.client.hdel(w.listKey, w.field), this.client.hdel(w.indexKey, w.indexField)]
        : [this.client.hset(w.listKey, w.field, w.entry), this.client.hset(w.indexKey, w.indexField, w.entry)]));
    }
  }

  async listSuppressions(indexKey: string, cursor: string, count: number): Promise<{ cursor: string; entries: string[] }> {
    await this.usable();
    const [next, flat] = await this.client.hscan(indexKey, cursor, "COUNT", count);
    return { cursor: next, entries: flat.filter((_, i) => i % 2 === 1) };
  }

  state(): StoreState {
    return this.stateHolder.get();
  }

  onStateChange(listener: (state: StoreState) => void): () => void {
    return this.stateHolder.subscribe(listener);
  }

  /** Resolves once the socket is closed, not merely when QUIT was answered. */
  async close(): Promise<void> {
    this.closing = true;
    await quitRedis(this.client);
  }


  private get scripts(): ScriptCommands {
    return this.client as unknown as ScriptCommands;
  }

  /** Waits for the first connection (bounded); afterwards a down store fails at once. */
  private async usable(): Promise<void> {
    if (this.stateHolder.get() === "ready") return;
    if (this.everReady) throw new StoreUnavailableError("not_ready", `redis store is ${this.stateHolder.get()}`);
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), this.connectGraceMs);
    });
    const first = await Promise.race([this.firstReady.then(() => "ready" as const), grace]);
    clearTimeout(timer);
    if (first === "late") throw new StoreUnavailableError("not_ready", "redis store has not connected yet");
  }
}

export function parseClaimReply(reply: number[], capCount: number): ClaimOutcome {
  const counters: CounterOutcome[] = [];
  for (let i = 0; i < capCount; i++) {
    const retry = Number(reply[2 + i * 3 + 2]);
    counters.push({
      count: Number(reply[2 + i * 3]),
      alreadyHeld: Number(reply[2 + i * 3 + 1]) === 1,
      retryAfterMs: retry >= 0 ? retry : null,
      blocking: retry >= 0 || retry === NEVER_FREES,
    });
  }
  return { allowed: Number(reply[0]) === 1, nowMs: Number(reply[1]), counters };
}
