import { createServer } from "node:net";

/** Whether nothing listens on a loopback port right now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A loopback port nothing listens on, chosen by the OS. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))));
    });
  });
}

/**
 * `count` free ports for Redis Cluster nodes: each node also listens on its
 * port + 10000 (the cluster bus), so both must be free. Picked at random in
 * 20000–29999, so suites running side by side (two checkouts) do not collide.
 */
export async function freeClusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let tries = 0; ports.length < count && tries < 1000; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if (ports.includes(port)) continue;
    if ((await isFree(port)) && (await isFree(port + 10_000))) ports.push(port);
  }
  if (ports.length < count) throw new Error(`found only ${ports.length} of ${count} free cluster ports`);
  return ports;
}
