import { Pool } from "pg";

export interface RulesPoolOptions {
  /** `postgres://user@host:port/db` */
  url: string;
  /** the pgPassword credential; used when the URL carries none */
  password?: string;
  /** how long a connection attempt may take before a load fails (2 s) */
  connectTimeoutMs?: number;
  /** how long a query may take before a load fails (5 s) */
  queryTimeoutMs?: number;
}

/** The URL with the password put in (pg lets a URL's empty password override a separate one). */
export function urlWithPassword(url: string, password: string | undefined): string {
  if (!password) return url;
  const parsed = new URL(url);
  if (parsed.password !== "" || parsed.hostname === "") return url;
  // the setter leaves "%" raw, which pg would then decode: encode it all ourselves
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

/**
 * A small pool for rule loads and writes. Errors of idle connections (the
 * database went away) are absorbed here: the rule cache reports the outage once.
 */
export function createRulesPool(options: RulesPoolOptions): Pool {
  const pool = new Pool({
    connectionString: urlWithPassword(options.url, options.password),
    max: 4,
    idleTimeoutMillis: 10_000,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 2_000,
    query_timeout: options.queryTimeoutMs ?? 5_000,
    application_name: "node-red-frequency-cap",
  });
  pool.on("error", () => undefined);
  return pool;
}
