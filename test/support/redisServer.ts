import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Redis from "ioredis";
import { freeClusterPorts, freePort } from "./ports";
import { sleep } from "./redis";

const run = promisify(execFile);

/**
 * Every server a test started and has not stopped: killed when this process
 * exits (mocha --exit ends it before a hook that timed out could), so no
 * run leaves servers behind on the box for the next one to compete with.
 */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** A redis-server of the test's own on a loopback port, stopped by pid. */
export class OwnRedis {
  private child: ChildProcess | undefined;
  readonly dir = mkdtempSync(join(tmpdir(), "sendgate-redis-"));

  /** port 0: a free one is picked at the first start */
  constructor(public port = 0, private readonly extraArgs: string[] = []) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    // a second start (a restart of a server that was never stopped) replaces the process, never leaves it running
    await this.stop();
    this.port ||= await freePort();
    const child = spawn("redis-server", [
      "--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
      "--dir", this.dir, ...this.extraArgs,
    ], { stdio: "ignore" });
    this.child = child;
    running.add(child);
    child.once("exit", () => running.delete(child));
    await waitForPing(this.port);
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }

  /** Stops the server's process where it is (SIGSTOP): its connections stay open and nothing is answered, as on a hung host. */
  pause(): void {
    this.child?.kill("SIGSTOP");
  }

  /** Lets a paused server run again (SIGCONT): it answers what it was sent meanwhile. */
  resume(): void {
    this.child?.kill("SIGCONT");
  }

  cleanUp(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

async function waitForPing(port: number): Promise<void> {
  const client = new Redis({ port, host: "127.0.0.1", lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => undefined); // refusals are expected while the server starts
  for (let i = 0; i < 100; i++) {
    try {
      await client.connect();
      await client.ping();
      client.disconnect();
      return;
    } catch {
      client.disconnect();
      await sleep(50);
    }
  }
  throw new Error(`redis-server on ${port} did not start`);
}

/**
 * Masters (three by default) and `replicas` replicas of each, slots spread by
 * redis-cli, on free ports. `extraArgs` go to every node (e.g. a short
 * `--cluster-node-timeout`, so a failover takes a second, not 15).
 */
export class OwnRedisCluster {
  nodes: OwnRedis[] = [];

  constructor(private readonly masters = 3, private readonly replicas = 0, private readonly extraArgs: string[] = []) {}

  get seeds(): string {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`).join(",");
  }

  /**
   * Picks the nodes' ports without starting them: a cap-config can be
   * deployed on the seeds of a cluster that is not there yet (start() then
   * creates it on these ports).
   */
  async reserve(): Promise<string> {
    if (this.nodes.length === 0) {
      const ports = await freeClusterPorts(this.masters * (1 + this.replicas));
      this.nodes = ports.map((port) => new OwnRedis(port, ["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`, ...this.extraArgs]));
    }
    return this.seeds;
  }

  async start(): Promise<void> {
    await this.reserve();
    await Promise.all(this.nodes.map((n) => n.start()));
    await run("redis-cli", ["--cluster", "create", ...this.nodes.map((n) => `127.0.0.1:${n.port}`), "--cluster-replicas", String(this.replicas), "--cluster-yes"]);
    await this.untilOk(100);
  }

  /** Kills every node (kill -9) and keeps their ports and nodes.conf: revive() brings the same cluster back. */
  async kill(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }

  /** Starts the killed nodes again (their slots read back from nodes.conf) and waits until the cluster is ok. */
  async revive(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.start()));
    await this.untilOk(20);
  }

  /** Pauses every node (SIGSTOP): the whole cluster hangs, its connections open. */
  pause(): void {
    for (const n of this.nodes) n.pause();
  }

  resume(): void {
    for (const n of this.nodes) n.resume();
  }

  /** Polls every `everyMs` until each node says cluster_state:ok (10 s at most). */
  private async untilOk(everyMs: number): Promise<void> {
    for (const started = Date.now(); Date.now() - started < 10_000;) {
      const infos = await Promise.all(this.nodes.map(async (n) => (await run("redis-cli", ["-p", String(n.port), "cluster", "info"])).stdout));
      if (infos.every((info) => info.includes("cluster_state:ok"))) return;
      await sleep(everyMs);
    }
    throw new Error("redis cluster did not reach cluster_state:ok");
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
    for (const n of this.nodes) n.cleanUp();
  }
}
