import type { Cluster, Redis } from "ioredis";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * Every Lua script the package runs in Redis, one per job, by folder of
 * lua/: the command ioredis defines for it (EVALSHA, EVAL once on NOSCRIPT)
 * and its file. The one place a script is registered.
 */
export const SCRIPTS = {
  claim: { command: "sendgateClaim", file: "caps/claim.lua" },
  record: { command: "sendgateRecord", file: "caps/record.lua" },
  inspect: { command: "sendgateInspect", file: "caps/inspect.lua" },
  release: { command: "sendgateRelease", file: "caps/release.lua" },
  quota: { command: "sendgateQuota", file: "caps/quota.lua" },
  suppression: { command: "sendgateSuppression", file: "suppression/suppression.lua" },
  gcra: { command: "sendgateGcra", file: "throughput/gcra.lua" },
  gcra_refund: { command: "sendgateGcraRefund", file: "throughput/gcra_refund.lua" },
  defer_put: { command: "sendgateDeferPut", file: "hold/defer_put.lua" },
  defer_lease: { command: "sendgateDeferLease", file: "hold/defer_lease.lua" },
  defer_take: { command: "sendgateDeferTake", file: "hold/defer_take.lua" },
  defer_take_tagged: { command: "sendgateDeferTakeTagged", file: "hold/defer_take_tagged.lua" },
  defer_ack: { command: "sendgateDeferAck", file: "hold/defer_ack.lua" },
  defer_expire: { command: "sendgateDeferExpire", file: "hold/defer_expire.lua" },
  defer_tag: { command: "sendgateDeferTag", file: "hold/defer_tag.lua" },
  defer_gates: { command: "sendgateDeferGates", file: "hold/defer_gates.lua" },
  history_append: { command: "sendgateHistoryAppend", file: "history/append.lua" },
  migrate_counter: { command: "sendgateMigrateCounter", file: "migrations/migrate_counter.lua" },
  defer_migrate: { command: "sendgateDeferMigrate", file: "migrations/defer_migrate.lua" },
} as const;

export type ScriptName = keyof typeof SCRIPTS;
type Command = (typeof SCRIPTS)[ScriptName]["command"];
type Arg = string | number | Buffer;

/** A defined script's call: numKeys, then its KEYS and ARGV. */
export type ScriptCall = (numKeys: number, ...keysAndArgs: Arg[]) => Promise<unknown>;

/** A client with every script defined on it (and its pipelines and MULTIs). */
export type ScriptCommands = Record<Command, ScriptCall>;

const sources = new Map<string, string>();
const INCLUDE = /^-- @include (\w+)$/gm;
const defined = new WeakSet<object>();

function packageLuaDir(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const candidate = join(dir, "lua");
    if (existsSync(join(candidate, SCRIPTS.claim.file))) return candidate;
    if (dirname(dir) === dir) throw new Error(`lua scripts not found above ${__dirname}`);
  }
}

/**
 * The source of a script, found from the package root (from src/ and dist/
 * alike). Each line `-- @include <lib>` is replaced by `lua/lib/<lib>.lua`, so
 * the counter scripts share one reading of entries.
 */
export function luaScript(name: ScriptName): string {
  const cached = sources.get(name);
  if (cached !== undefined) return cached;
  const dir = packageLuaDir();
  const source = readFileSync(join(dir, SCRIPTS[name].file), "utf8")
    .replace(INCLUDE, (_, lib: string) => readFileSync(join(dir, "lib", `${lib}.lua`), "utf8"));
  sources.set(name, source);
  return source;
}

/** Defines every script on a client, once however many stores, queues and registries share it; the client, typed with them. */
export function withScripts(client: Redis | Cluster): ScriptCommands {
  if (!defined.has(client)) {
    defined.add(client);
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) client.defineCommand(SCRIPTS[name].command, { lua: luaScript(name) });
  }
  return client as unknown as ScriptCommands;
}
