declare module "node-red-node-test-helper" {
  import type { Node } from "node-red";

  type NodeModule = unknown;
  interface TestHelper {
    init(nodeRedPath: string, userSettings?: Record<string, unknown>): void;
    settings(userSettings: Record<string, unknown>): Record<string, unknown>;
    load(nodes: NodeModule | NodeModule[], flow: object[], credentials?: Record<string, object>): Promise<void>;
    unload(): Promise<void>;
    getNode(id: string): Node | null;
    startServer(): Promise<void>;
    stopServer(): Promise<void>;
    clearFlows(): Promise<void>;
    request(): import("node:http").Server & { get(path: string): unknown };
    log(): { args: unknown[][] } & Record<string, unknown>;
  }
  const helper: TestHelper;
  export = helper;
}
