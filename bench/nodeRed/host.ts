import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { packageRoot } from "../packageRoot";
import { FLOOR_PACER } from "../throughput/floorPacer";
import { loadNodeRed, type EmbeddedRed, type FlowsStartedEvent, type LogEntry } from "./embeddedRed";

/** A Node-RED runtime embedded in this process, with this package's nodes loaded. */
export interface NodeRedHost {
  red: EmbeddedRed;
  stop(): Promise<void>;
}

const FIRST_START_MS = 15_000;

/**
 * A node module of the bench's own in `userDir`: the reference pacer
 * (floorPacer), which the package does not ship, loaded as Node-RED loads any
 * module (a folder whose package.json has a "node-red" section).
 */
async function benchNodes(userDir: string): Promise<string> {
  const dir = join(userDir, "bench-nodes");
  await mkdir(dir);
  await writeFile(join(dir, "package.json"), JSON.stringify({ name: "sendgate-bench-nodes", version: "0.0.0", "node-red": { nodes: { [FLOOR_PACER]: "floorPacer.js" } } }));
  await writeFile(join(dir, "floorPacer.js"), `module.exports = require(${JSON.stringify(require.resolve("../throughput/floorPacer"))}).default;\n`);
  return dir;
}

/**
 * Starts Node-RED as a library: a throwaway userDir, no HTTP at all, and this
 * package as the extra node module (`nodesDir` at the package root, so the
 * runtime reads its package.json "node-red" section like an installed module),
 * beside the bench's own reference nodes.
 */
export async function startNodeRed(): Promise<NodeRedHost> {
  const userDir = await mkdtemp(join(tmpdir(), "sgbench-nr-"));
  const red = loadNodeRed();
  red.init({
    userDir,
    nodesDir: [packageRoot(), await benchNodes(userDir)],
    flowFile: "flows.json",
    httpAdminRoot: false,
    httpNodeRoot: false,
    credentialSecret: false,
    // warnings and worse, on stderr: stdout carries only the report
    logging: { stderr: { level: "warn", metrics: false, audit: false, handler: () => toStderr } },
    telemetry: { enabled: false, updateNotification: false },
  });
  // the empty flow file starts after start() resolves: wait for it, so no later deploy races it
  const firstStart = nextFlowsStarted(red, () => true, FIRST_START_MS);
  await red.start();
  await firstStart;
  return {
    red,
    async stop() {
      await red.stop();
      await rm(userDir, { recursive: true, force: true });
    },
  };
}

const LEVELS: Record<number, string> = { 10: "fatal", 20: "error", 30: "warn" };

function toStderr(entry: LogEntry): void {
  const text = entry.msg instanceof Error ? entry.msg.message : String(entry.msg);
  const who = entry.type ? `[${entry.type}:${entry.name ?? entry.id ?? ""}] ` : "";
  process.stderr.write(`[node-red ${LEVELS[entry.level] ?? entry.level}] ${who}${text}\n`);
}

/** Resolves on the next `flows:started` event that `matches`, or rejects after `timeoutMs`. */
export function nextFlowsStarted(red: EmbeddedRed, matches: (event: FlowsStartedEvent) => boolean, timeoutMs: number): Promise<FlowsStartedEvent> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      red.events.off("flows:started", listener);
      reject(new Error(`Node-RED flows did not start within ${timeoutMs} ms (a node type missing?)`));
    }, timeoutMs);
    function listener(event: FlowsStartedEvent): void {
      if (!matches(event)) return;
      clearTimeout(timer);
      red.events.off("flows:started", listener);
      resolve(event);
    }
    red.events.on("flows:started", listener);
  });
}
