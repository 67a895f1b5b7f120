import Redis from "ioredis";
import { runGateScenario } from "./gateScenario";
import { Completions } from "./load/completions";
import { describeMachine } from "./machine";
import { nodeRedVersion } from "./nodeRed/embeddedRed";
import { startNodeRed, type NodeRedHost } from "./nodeRed/host";
import { runRawScenario } from "./rawScenario";
import { loadClaimScript } from "./redis/claimScript";
import { endpointOf } from "./redis/endpoint";
import { countKeys, dropKeys, runPrefix } from "./redis/keys";
import { markdownTable, type Row } from "./report/table";
import { loadLine, machineLine, verdictLines, type ScenarioVerdicts } from "./report/summary";
import { scenarios } from "./scenarios";
import { readSettings } from "./settings";

function progress(text: string): void {
  process.stderr.write(`[bench] ${text}\n`);
}

async function main(): Promise<void> {
  const settings = readSettings();
  const endpoint = endpointOf(settings.redisUrl);
  const prefix = runPrefix();
  const client = new Redis(settings.redisUrl, { maxRetriesPerRequest: 1 });
  let host: NodeRedHost | undefined;
  let completions: Completions | undefined;
  try {
    progress("starting Node-RED");
    host = await startNodeRed();
    completions = Completions.install(host.red);
    const machine = await describeMachine(client, nodeRedVersion());
    const sha = await loadClaimScript(client);

    const rows: Row[] = [];
    const verdicts: ScenarioVerdicts[] = [];
    const list = scenarios(settings.only);
    const first = list[0];
    if (first) {
      // a young process pauses for JIT and heap growth: one unreported pass keeps that off the first row
      progress(`${first.name}: unreported pass to warm the process`);
      const pass = await runGateScenario(host.red, completions, first, settings, `${prefix}-prewarm`);
      verdicts.push({ scenario: `${first.name} (unreported pass)`, measured: pass.measured, warmup: pass.warmup });
      await dropKeys(client, `${prefix}-prewarm`);
    }
    for (const scenario of list) {
      const caps = scenario.rules.length;
      const gatePrefix = `${prefix}-${scenario.name}`;
      progress(`${scenario.name}: ${settings.warmup} warm-up + ${settings.msgs} msgs through the gate`);
      const gate = await runGateScenario(host.red, completions, scenario, settings, gatePrefix);
      verdicts.push({ scenario: scenario.name, measured: gate.measured, warmup: gate.warmup });
      let rawPerSec: number | undefined;
      if (scenario.store === "redis") {
        const written = await countKeys(client, gatePrefix);
        if (written === 0) throw new Error(`${scenario.name}: the gate wrote no key under ${gatePrefix}`);
        await dropKeys(client, gatePrefix);
        progress(`${scenario.name}: redis-benchmark EVALSHA, ${settings.rawRequests} claims`);
        rawPerSec = (await runRawScenario(client, endpoint, sha, scenario, settings, `${prefix}-raw-${caps}cap`)).perSec;
      }
      const m = gate.measured;
      rows.push({
        scenario: scenario.name,
        store: scenario.store,
        caps,
        msgsPerSec: gate.msgsPerSec,
        p50Ms: gate.p50Ms,
        p99Ms: gate.p99Ms,
        ...(rawPerSec !== undefined ? { rawPerSec } : {}),
        admittedShare: m.allowed / (m.allowed + m.skipped + m.errors),
      });
    }

    const lines = verdictLines(verdicts);
    console.log(machineLine(machine));
    console.log(loadLine(settings));
    console.log("");
    console.log(markdownTable(rows));
    console.log("");
    for (const line of lines) console.log(line);
    if (verdicts.some((v) => v.measured.failOpen + v.warmup.failOpen + v.measured.errors + v.warmup.errors > 0)) process.exitCode = 1;
  } finally {
    completions?.uninstall();
    await host?.stop();
    await dropKeys(client, prefix);
    const left = await countKeys(client, prefix);
    console.log(`redis keys left under ${prefix}*: ${left}`);
    if (left > 0) process.exitCode = 1;
    await client.quit();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exitCode = 1;
});
