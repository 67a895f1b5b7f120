import type Redis from "ioredis";

/**
 * CPU seconds Redis has spent, user + system, from INFO cpu: its main thread's
 * where Redis reports it (7.0 on), else the whole process's. The bench is alone
 * on its Redis, so the change over a row is that row's.
 */
export async function redisCpuSeconds(client: Redis): Promise<number> {
  const info = await client.info("cpu");
  const field = (name: string): number | undefined => {
    const found = new RegExp(`^${name}:([0-9.]+)`, "m").exec(info);
    return found ? Number(found[1]) : undefined;
  };
  const sys = field("used_cpu_sys_main_thread") ?? field("used_cpu_sys");
  const user = field("used_cpu_user_main_thread") ?? field("used_cpu_user");
  if (sys === undefined || user === undefined) throw new Error("INFO cpu has no used_cpu_sys / used_cpu_user");
  return sys + user;
}
