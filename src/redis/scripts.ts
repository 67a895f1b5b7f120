import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

const cache = new Map<string, string>();
const INCLUDE = /^-- @include (\w+)$/m;

function packageLuaDir(): string {
  let dir = __dirname;
  for (;;) {
    const candidate = join(dir, "lua");
    if (existsSync(join(candidate, "claim.lua"))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`lua scripts not found above ${__dirname}`);
    dir = parent;
  }
}

/**
 * The source of `lua/<name>.lua`, found from the package root (works from
 * src/ and dist/). A line `-- @include <lib>` is replaced by
 * `lua/lib/<lib>.lua`, so the counter scripts share one reading of entries.
 */
export function luaScript(name: string): string {
  const cached = cache.get(name);
  if (cached !== undefined) return cached;
  const dir = packageLuaDir();
  const source = readFileSync(join(dir, `${name}.lua`), "utf8")
    .replace(INCLUDE, (_, lib: string) => readFileSync(join(dir, "lib", `${lib}.lua`), "utf8"));
  cache.set(name, source);
  return source;
}
