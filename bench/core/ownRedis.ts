import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Redis from "ioredis";

/**
 * A redis-server of the bench's own on a free loopback port: the Redis CPU
 * and memory rows read INFO deltas, which only mean something when nothing
 * else uses the server. Stopped by pid.
 */
export class BenchRedis {
  private child: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), "sgbench-redis-"));
  port = 0;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        const address = server.address();
        server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
      });
    });
    this.child = spawn("redis-server", ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", this.dir], { stdio: "ignore" });
    const probe = new Redis({ port: this.port, host: "127.0.0.1", lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on("error", () => undefined);
    for (let i = 0; i < 100; i++) {
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        return;
      } catch {
        probe.disconnect();
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error(`bench redis-server on ${this.port} did not start`);
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGKILL");
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Redis's own CPU (user + sys, µs) and memory (bytes) from INFO. */
export async function redisCost(client: Redis): Promise<{ cpuUs: number; memory: number }> {
  const info = await client.info();
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? Number.NaN);
  return { cpuUs: (field("used_cpu_user") + field("used_cpu_sys")) * 1e6, memory: field("used_memory") };
}
