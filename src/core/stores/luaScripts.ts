import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

const cache = new Map<string, string>();

/** The source of `lua/<name>.lua`, found from the package root (works from src/ and dist/). */
export function luaScript(name: string): string {
  const cached = cache.get(name);
  if (cached !== undefined) return cached;
  let dir = __dirname;
  for (;;) {
    const candidate = join(dir, "lua", `${name}.lua`);
    if (existsSync(candidate)) {
      const source = readFileSync(candidate, "utf8");
      cache.set(name, source);
      return source;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`lua script ${name}.lua not found above ${__dirname}`);
    dir = parent;
  }
}
