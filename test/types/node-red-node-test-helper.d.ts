declare module "node-red-node-test-helper" {
  import type { Node } from "node-red";

  type NodeModule = unknown;
  interface TestResponse {
    status: number;
    body: unknown;
    text: string;
    headers: Record<string, string>;
  }
  interface TestRequest extends PromiseLike<TestResponse> {
    send(body: unknown): TestRequest;
    set(header: string, value: string): TestRequest;
    query(query: Record<string, string>): TestRequest;
  }
  interface TestAgent {
    get(path: string): TestRequest;
    post(path: string): TestRequest;
    put(path: string): TestRequest;
    delete(path: string): TestRequest;
  }
  interface TestHelper {
    init(nodeRedPath: string, userSettings?: Record<string, unknown>): void;
    settings(userSettings: Record<string, unknown>): Record<string, unknown>;
    load(nodes: NodeModule | NodeModule[], flow: object[], credentials?: Record<string, object>): Promise<void>;
    unload(): Promise<void>;
    getNode(id: string): Node | null;
    startServer(): Promise<void>;
    stopServer(): Promise<void>;
    clearFlows(): Promise<void>;
    request(): TestAgent;
    log(): { args: unknown[][] } & Record<string, unknown>;
  }
  const helper: TestHelper;
  export = helper;
}
