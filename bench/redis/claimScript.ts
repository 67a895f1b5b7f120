import type Redis from "ioredis";
import { luaScript } from "../../src/redis/scripts";

/** SCRIPT LOADs lua/caps/claim.lua (the very file the Redis store defines) and returns its SHA. */
export async function loadClaimScript(client: Redis): Promise<string> {
  const sha = await client.script("LOAD", luaScript("claim"));
  if (typeof sha !== "string" || !/^[0-9a-f]{40}$/.test(sha)) throw new Error(`SCRIPT LOAD returned ${JSON.stringify(sha)}`);
  return sha;
}
