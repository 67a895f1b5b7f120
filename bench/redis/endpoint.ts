/** Where redis-benchmark connects: the host, port and password of the bench's redis URL. */
export interface RedisEndpoint {
  host: string;
  port: number;
  password?: string;
}

export function endpointOf(redisUrl: string): RedisEndpoint {
  const url = new URL(redisUrl);
  if (url.protocol !== "redis:") throw new Error(`REDIS_URL: only redis:// is supported by this bench, got ${url.protocol}`);
  return {
    host: url.hostname || "127.0.0.1",
    port: url.port ? Number(url.port) : 6379,
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
  };
}
