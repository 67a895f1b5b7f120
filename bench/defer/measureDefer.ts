import type Redis from "ioredis";
import type { Completions } from "../load/completions";
import type { EmbeddedRed } from "../nodeRed/embeddedRed";
import { dropKeys } from "../redis/keys";
import type { DeferRow } from "../report/deferTable";
import type { BenchSettings } from "../settings";
import { runGateDefer } from "./gateDefer";
import { runRawDefer } from "./rawQueue";

/** The names BENCH_SCENARIOS knows for the defer rows (`defer` = both). */
export const DEFER_NAMES = ["defer", "defer-raw", "defer-gate"] as const;

export interface DeferSelection {
  raw: boolean;
  gate: boolean;
}

/** Which defer rows `only` asks for (all of them when it is absent), and the names left for the main table. */
export function splitDeferNames(only?: readonly string[]): { defer: DeferSelection; rest?: string[] } {
  if (!only) return { defer: { raw: true, gate: true } };
  const has = (name: string): boolean => only.includes(name);
  return {
    defer: { raw: has("defer") || has("defer-raw"), gate: has("defer") || has("defer-gate") },
    rest: only.filter((name) => !(DEFER_NAMES as readonly string[]).includes(name)),
  };
}

/** unreported msgs before each defer row (a tenth, at most 1,000): scripts loaded, code warm */
export function deferWarmup(settings: BenchSettings): number {
  return Math.min(1_000, Math.max(1, Math.round(settings.deferMsgs / 10)));
}

export interface DeferContext {
  red: EmbeddedRed;
  completions: Completions;
  redis: Redis;
  settings: BenchSettings;
  prefix: string;
  progress: (text: string) => void;
}

/** The defer rows: the raw queue, then the gate end to end; each one's keys are checked, then dropped. */
export async function measureDefer(ctx: DeferContext, which: DeferSelection): Promise<DeferRow[]> {
  const { settings, prefix, progress } = ctx;
  const msgs = settings.deferMsgs;
  const concurrency = settings.deferConcurrency;
  const warmup = deferWarmup(settings);
  const rows: DeferRow[] = [];
  if (which.raw) {
    const keyPrefix = `${prefix}-defer-raw`;
    progress(`defer-raw: ${warmup} unreported + ${msgs} msgs deferred, then released by a DeferPoller`);
    await runRawDefer({ redisUrl: settings.redisUrl, keyPrefix: `${keyPrefix}-w`, msgs: warmup, concurrency });
    rows.push(await runRawDefer({ redisUrl: settings.redisUrl, keyPrefix, msgs, concurrency }));
    await dropKeys(ctx.redis, keyPrefix);
  }
  if (which.gate) {
    const keyPrefix = `${prefix}-defer-gate`;
    progress(`defer-gate: ${warmup} unreported + ${msgs} recipients × 2 msgs through the gate, the second of each held ~1 s`);
    rows.push(await runGateDefer(ctx.red, ctx.completions, { redisUrl: settings.redisUrl, keyPrefix, msgs, concurrency, warmup }));
    await dropKeys(ctx.redis, keyPrefix);
  }
  return rows;
}
