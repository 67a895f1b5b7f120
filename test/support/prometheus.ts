import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports";

/** Debian's Prometheus and promtool (`apt-get install prometheus`; .ci/run installs it); PROMETHEUS_PATH / PROMTOOL_PATH name others. */
export const PROMETHEUS = process.env.PROMETHEUS_PATH || "/usr/bin/prometheus";
export const PROMTOOL = process.env.PROMTOOL_PATH || "/usr/bin/promtool";

function need(binary: string): void {
  if (!existsSync(binary)) throw new Error(`no ${binary}: install it (apt-get install -y prometheus) or set PROMETHEUS_PATH and PROMTOOL_PATH`);
}

/** Runs promtool with `args`; its exit status and everything it printed. */
export function promtool(args: string[], cwd?: string): { status: number | null; output: string } {
  need(PROMTOOL);
  const result = spawnSync(PROMTOOL, args, { cwd, encoding: "utf8", timeout: 60_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** One scrape job: a metrics path on loopback targets. */
export interface ScrapeJob {
  job: string;
  metricsPath: string;
  targets: string[];
}

/** One sample of an instant query's vector. */
export interface VectorSample {
  metric: Record<string, string>;
  value: number;
}

export interface AlertState {
  labels: Record<string, string>;
  state: "pending" | "firing" | "inactive";
}

interface ApiAnswer<T> {
  status: "success" | "error";
  error?: string;
  data: T;
}

/**
 * A Prometheus server of the test's own: its own loopback port, a config
 * written for the test (scraping and evaluating every second), a temp data
 * dir, stopped by pid. Nothing of a system service is used.
 */
export class PrometheusProcess {
  private child: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), "sendgate-prom-"));
  output = "";
  port = 0;

  constructor(private readonly jobs: ScrapeJob[], private readonly ruleFiles: string[] = []) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    need(PROMETHEUS);
    this.port = await freePort();
    const config = {
      global: { scrape_interval: "1s", scrape_timeout: "1s", evaluation_interval: "1s" },
      rule_files: this.ruleFiles,
      scrape_configs: this.jobs.map((j) => ({ job_name: j.job, metrics_path: j.metricsPath, static_configs: [{ targets: j.targets }] })),
    };
    // YAML is a superset of JSON
    const configFile = join(this.dir, "prometheus.yml");
    writeFileSync(configFile, JSON.stringify(config, null, 2));
    const child = spawn(PROMETHEUS, [
      `--config.file=${configFile}`, `--storage.tsdb.path=${join(this.dir, "data")}`,
      `--web.listen-address=127.0.0.1:${this.port}`, "--log.level=warn",
    ], { stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    child.stdout?.on("data", (d: Buffer) => { this.output += d.toString(); });
    child.stderr?.on("data", (d: Buffer) => { this.output += d.toString(); });
    const started = Date.now();
    for (;;) {
      if (child.exitCode !== null) throw new Error(`prometheus exited: ${this.output}`);
      const ready = await fetch(`${this.baseUrl}/-/ready`).then((r) => r.ok, () => false);
      if (ready) return;
      if (Date.now() - started > 30_000) throw new Error(`prometheus did not get ready: ${this.output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async api<T>(path: string): Promise<T> {
    const res = await fetch(`${this.baseUrl}${path}`);
    const answer = (await res.json()) as ApiAnswer<T>;
    if (answer.status !== "success") throw new Error(`${path}: ${answer.error ?? res.status}`);
    return answer.data;
  }

  /** An instant query through the HTTP API (/api/v1/query); throws on a bad expression. */
  async query(expr: string): Promise<VectorSample[]> {
    const data = await this.api<{ resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] }>(
      `/api/v1/query?query=${encodeURIComponent(expr)}`);
    if (data.resultType !== "vector") throw new Error(`${expr}: a ${data.resultType}, not a vector`);
    return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  /** The scrape targets and their health. */
  async targets(): Promise<{ labels: Record<string, string>; health: string; lastError: string }[]> {
    return (await this.api<{ activeTargets: { labels: Record<string, string>; health: string; lastError: string }[] }>("/api/v1/targets")).activeTargets;
  }

  /** Every alerting rule loaded, with its health (an evaluation error makes it "err"). */
  async rules(): Promise<{ name: string; health: string; lastError?: string; evaluated: boolean }[]> {
    const data = await this.api<{ groups: { rules: { name: string; health: string; lastError?: string; lastEvaluation: string }[] }[] }>("/api/v1/rules");
    return data.groups.flatMap((g) => g.rules.map((r) => ({
      name: r.name, health: r.health, evaluated: !r.lastEvaluation.startsWith("0001-"),
      ...(r.lastError ? { lastError: r.lastError } : {}),
    })));
  }

  /** Alerts pending or firing now. */
  async alerts(): Promise<AlertState[]> {
    return (await this.api<{ alerts: AlertState[] }>("/api/v1/alerts")).alerts;
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
