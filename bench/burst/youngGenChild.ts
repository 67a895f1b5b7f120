import Redis from "ioredis";
import { Completions } from "../load/completions";
import { startNodeRed } from "../nodeRed/host";
import { dropKeys } from "../redis/keys";
import { readSettings } from "../settings";
import { gateBurstRows } from "./measureBursts";
import { ROWS_MARK } from "./youngGen";

/** Run by youngGen.ts in a Node started with a larger young generation, with the parent's BENCH_* settings: the burst rows, as one line on stdout. */
async function main(): Promise<void> {
  const settings = readSettings();
  const prefix = process.env.SGBENCH_PREFIX ?? "sgbench-yg";
  const progress = (text: string): void => { process.stderr.write(`[bench young gen] ${text}\n`); };
  const redis = new Redis(settings.redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => null });
  const host = await startNodeRed();
  try {
    const completions = Completions.install(host.red);
    const rows = await gateBurstRows({ red: host.red, completions, redis, settings, prefix, progress });
    process.stdout.write(`${ROWS_MARK}${JSON.stringify(rows)}\n`);
  } finally {
    await host.stop();
    await dropKeys(redis, prefix);
    redis.disconnect();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`[bench young gen] ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
