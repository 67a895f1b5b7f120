import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { freePort } from "./ports";

const ROOT = resolve(__dirname, "..", "..", "..");

/**
 * Which Node-RED runs, and on which Node: the dev dependency on this Node by
 * default; `SENDGATE_NODE_RED` (a red.js) and `SENDGATE_NODE` (a node binary)
 * choose another, as .ci/run does to run the real-Node-RED tests on Node-RED 5
 * and Node 22 from ci/node-red-5.
 */
export const NODE_RED_SCRIPT = process.env.SENDGATE_NODE_RED || require.resolve("node-red/red.js");
export const NODE_BINARY = process.env.SENDGATE_NODE || process.execPath;

/** The version of the Node-RED that NODE_RED_SCRIPT starts. */
export function nodeRedVersion(): string {
  const pkg = JSON.parse(readFileSync(resolve(dirname(NODE_RED_SCRIPT), "package.json"), "utf8")) as { version: string };
  return pkg.version;
}

/**
 * A real Node-RED process (node-red/red.js) with this package loaded from the
 * repo through `nodesDir`, a flow file of the test's choosing, stopped by pid.
 */
export class NodeRedProcess {
  private child: ChildProcess | undefined;
  private readonly userDir = mkdtempSync(join(tmpdir(), "sendgate-nr-"));
  output = "";
  port = 0;

  constructor(private readonly flowFile: string, private readonly extraSettings: Record<string, unknown> = {}) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.port ||= await freePort();
    this.output = "";
    copyFileSync(this.flowFile, join(this.userDir, "flows.json"));
    const settings = {
      uiHost: "127.0.0.1", uiPort: this.port, flowFile: "flows.json", nodesDir: [ROOT],
      telemetry: { enabled: false }, editorTheme: { projects: { enabled: false }, tours: false },
      logging: { console: { level: "info" } }, ...this.extraSettings,
    };
    const settingsFile = join(this.userDir, "settings.js");
    writeFileSync(settingsFile, `module.exports = ${JSON.stringify(settings)};\n`);
    const child = spawn(NODE_BINARY, [NODE_RED_SCRIPT, "-u", this.userDir, "-s", settingsFile], {
      cwd: ROOT, stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    child.stdout?.on("data", (d: Buffer) => { this.output += d.toString(); });
    child.stderr?.on("data", (d: Buffer) => { this.output += d.toString(); });
    const started = Date.now();
    while (!this.output.includes("Started flows")) {
      if (child.exitCode !== null) throw new Error(`node-red exited: ${this.output}`);
      if (Date.now() - started > 30_000) throw new Error(`node-red did not start: ${this.output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Stops the process; its user dir stays, so start() again is a restart. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
  }

  /** Kills the process with SIGKILL (a crash: no close handler runs); its user dir stays. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGKILL");
      await exited;
    }
  }

  /** The user dir (where a memory store keeps its files). */
  get dir(): string {
    return this.userDir;
  }

  cleanUp(): void {
    rmSync(this.userDir, { recursive: true, force: true });
  }
}

export { ROOT };
