import WebSocket from "ws";

export interface DebugMsg {
  /** the debug node's name */
  name: string;
  msg: Record<string, unknown>;
}

export interface ShownStatus {
  fill?: string;
  shape?: string;
  text?: string;
}

/**
 * What the editor sees of a running Node-RED, through the same websocket
 * (/comms): the debug sidebar's msgs and each node's status.
 */
export class EditorComms {
  readonly debug: DebugMsg[] = [];
  readonly status = new Map<string, ShownStatus[]>();

  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const batch = JSON.parse(String(data)) as { topic: string; data: Record<string, unknown> }[];
      if (!Array.isArray(batch)) return;
      for (const { topic, data: payload } of batch) {
        if (topic === "debug") {
          const text = payload.msg;
          this.debug.push({ name: String(payload.name ?? ""), msg: (typeof text === "string" ? JSON.parse(text) : text) as Record<string, unknown> });
        } else if (topic.startsWith("status/")) {
          const id = topic.slice("status/".length);
          const list = this.status.get(id) ?? [];
          list.push(payload);
          this.status.set(id, list);
        }
      }
    });
  }

  static async connect(baseUrl: string): Promise<EditorComms> {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/comms`);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    ws.send(JSON.stringify({ subscribe: "debug" }));
    ws.send(JSON.stringify({ subscribe: "status/#" }));
    // the runtime confirms nothing: give the subscriptions a moment to land
    await new Promise((r) => setTimeout(r, 200));
    return new EditorComms(ws);
  }

  of(name: string): Record<string, unknown>[] {
    return this.debug.filter((d) => d.name === name).map((d) => d.msg);
  }

  /** Waits until `count` debug msgs arrived in all, or fails after `timeoutMs`. */
  async until(count: number, timeoutMs = 5000): Promise<void> {
    const started = Date.now();
    while (this.debug.length < count) {
      if (Date.now() - started > timeoutMs) throw new Error(`expected ${count} debug msgs, got ${this.debug.length}: ${JSON.stringify(this.debug.map((d) => d.name))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  lastStatus(id: string): ShownStatus | undefined {
    return this.status.get(id)?.at(-1);
  }

  close(): void {
    this.ws.close();
  }
}
