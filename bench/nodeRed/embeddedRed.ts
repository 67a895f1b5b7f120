import type { EventEmitter } from "node:events";
import type { Node, NodeMessage } from "node-red";

/** The settings this bench gives RED.init (Node-RED 4.1.8 reads many more; all optional). */
export interface EmbeddedSettings {
  userDir: string;
  nodesDir: string[];
  flowFile: string;
  httpAdminRoot: false;
  httpNodeRoot: false;
  credentialSecret: false;
  logging: Record<string, LoggerSettings>;
  telemetry: { enabled: boolean; updateNotification: boolean };
}

/** One entry Node-RED's log hands a logger (@node-red/util lib/log.js). */
export interface LogEntry {
  level: number;
  msg: unknown;
  type?: string;
  name?: string;
  id?: string;
}

/** A logger of `settings.logging`: `console` is built in, any other needs a handler. */
export interface LoggerSettings {
  level: "fatal" | "error" | "warn" | "info";
  metrics: boolean;
  audit: boolean;
  handler?: (settings: LoggerSettings) => (entry: LogEntry) => void;
}

/** What @node-red/util hooks pass to `onComplete` (runtime Node.prototype._complete). */
export interface CompleteEvent {
  msg: NodeMessage;
  error?: Error;
  node: { id: string; node: Node };
}

/** What the runtime emits as `flows:started` once a deploy's nodes all run. */
export interface FlowsStartedEvent {
  config: { rev?: string; flows?: { id?: string }[] };
  type: string;
}

/**
 * The part of `require("node-red")` (4.1.8, lib/red.js) this bench uses. The
 * DefinitelyTyped types model an older, narrower API (init needs a server,
 * `nodes` is an empty interface, hooks take no label), so this states the
 * real one instead.
 */
export interface EmbeddedRed {
  init(settings: EmbeddedSettings): void;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** red.js: `get version() { return runtime._.version }`, the runtime's getVersion function */
  readonly version: () => string;
  readonly events: EventEmitter;
  readonly hooks: {
    add(hookId: `onComplete.${string}`, handler: (event: CompleteEvent) => void): void;
    remove(hookId: string): void;
  };
  /** the runtime's internal nodes module */
  readonly nodes: { getNode<T extends Node = Node>(id: string): T | null };
  readonly runtime: {
    flows: {
      setFlows(opts: { flows: { flows: object[] }; deploymentType: "full" }): Promise<{ rev: string }>;
    };
  };
}

/**
 * The installed node-red package's version. (RED.version() says "4.1.8-git"
 * here: it appends -git whenever a .git folder sits four levels above its
 * runtime, which is true of any node_modules inside a git checkout.)
 */
export function nodeRedVersion(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require("node-red/package.json") as { version: string }).version;
}

export function loadNodeRed(): EmbeddedRed {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require("node-red") as EmbeddedRed;
}
