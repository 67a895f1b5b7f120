import { runCampaign } from "../../bench/burst/campaign";
import { Completions } from "../../bench/load/completions";
import { startNodeRed } from "../../bench/nodeRed/host";

/**
 * A campaign burst (bench/burst/campaign.ts) in a Node-RED of its own,
 * embedded in this child process (no test helper: its spies keep every msg
 * they see). Reads its store fields, key prefix and size from argv as JSON and
 * prints the result as one line of JSON.
 */
async function main(): Promise<void> {
  const { store, keyPrefix, msgs } = JSON.parse(process.argv[2] ?? "{}") as { store: Record<string, unknown>; keyPrefix: string; msgs: number };
  const host = await startNodeRed();
  try {
    const completions = Completions.install(host.red);
    const result = await runCampaign(host.red, completions, { store, keyPrefix, msgs });
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await host.stop();
  }
}

main().then(() => process.exit(0), (err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
