import { join } from "node:path";
import type { NodeAPI } from "node-red";
import { registerCapRoutes } from "./adminApi/capRoutes";
import { registerHeldRoutes } from "./adminApi/heldRoutes";
import { registerHistoryRoutes } from "./adminApi/historyRoutes";
import { registerMetricsRoutes } from "./adminApi/metricsRoutes";
import { AdmissionFeed } from "./sidebar/admissionFeed";
import { registerSuppressionRoutes } from "./adminApi/suppressionRoutes";
import { createCapService } from "../service/createCapService";
import type { CapConfigDef, CapConfigNode, CapCredentials } from "./gate/capConfigNode";

export type { CapConfigDef, CapConfigNode, CapCredentials } from "./gate/capConfigNode";

export default function register(RED: NodeAPI): void {
  // the editor's Admission sidebar: every cap-config's gate counts, pushed over the editor's websocket
  const feed = new AdmissionFeed((topic, data, retain) => RED.comms.publish(topic, data, retain));

  function CapConfig(this: CapConfigNode, def: CapConfigDef): void {
    RED.nodes.createNode(this, def);
    try {
      const userDir = (RED.settings as { userDir?: string }).userDir;
      this.service = createCapService(def, this.credentials ?? {}, {
        warn: (text) => this.warn(text),
        error: (text) => this.error(text),
      }, userDir ? {
        configId: this.id,
        memoryStateFile: join(userDir, "sendgate", `memory-store-${this.id}.json`),
        memoryDeferFile: join(userDir, "sendgate", `memory-defer-${this.id}.jsonl`),
        legacyMemoryDeferFile: join(userDir, "sendgate", `memory-defer-${this.id}.json`),
      } : { configId: this.id });
    } catch (err) {
      this.problem = err as Error;
      this.error((err as Error).message);
    }
    const unwatch = this.service ? feed.watch(this.id, def.name || this.id, this.service.metrics) : undefined;
    this.on("close", (_removed: boolean, done: () => void) => {
      unwatch?.();
      const service = this.service;
      this.service = undefined;
      if (!service) return done();
      service.close().then(done, (err: Error) => {
        this.warn(`closing the store: ${err.message}`);
        done();
      });
    });
  }

  registerCapRoutes(RED);
  registerSuppressionRoutes(RED);
  registerMetricsRoutes(RED);
  registerHeldRoutes(RED);
  registerHistoryRoutes(RED);

  RED.nodes.registerType<CapConfigNode, CapConfigDef, Record<string, never>, CapCredentials>("cap-config", CapConfig, {
    credentials: {
      redisPassword: { type: "password" },
      pgPassword: { type: "password" },
      hmacSecret: { type: "password" },
    },
  });
}
