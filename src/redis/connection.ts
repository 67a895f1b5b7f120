import type { Cluster, Redis } from "ioredis";

type RedisClient = Redis | Cluster;

/** `host:port` seeds of a Redis Cluster, as cap-config's `redisNodes` lists them. */
export function clusterSeeds(hostPorts: readonly string[]): { host: string; port: number }[] {
  return hostPorts.map((hostPort) => {
    const [host, port] = hostPort.trim().split(":");
    return { host: host || "127.0.0.1", port: Number(port || 6379) };
  });
}

/** Closes one ioredis connection; resolves when its socket has ended. */
export async function quitRedis(client: RedisClient): Promise<void> {
  if (client.status === "end") return;
  const ended = new Promise<void>((resolve) => client.once("end", () => resolve()));
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      client.disconnect();
      resolve();
    }, 2000);
  });
  await Promise.race([ended, late]);
  clearTimeout(timer);
}
