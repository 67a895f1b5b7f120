import type { NodeAPI } from "node-red";

export const PLUGIN_ID = "sendgate-admission-sidebar";

/**
 * The runtime side of the editor's Admission sidebar (plugins/admission-sidebar.html):
 * it only declares the plugin. The counts it shows are pushed by each
 * cap-config (src/nodes/admissionFeed.ts), the inspector reads the admin API.
 */
export default function register(RED: NodeAPI): void {
  (RED as unknown as { plugins: { registerPlugin(id: string, definition: Record<string, unknown>): void } }).plugins.registerPlugin(PLUGIN_ID, {
    type: "sendgate-sidebar",
  });
}
