import type { NodeAPI } from "node-red";
import type { HistoryEntry } from "../../core/history/historyEntry";
import { HttpError, queryText, route, serviceOf } from "./http";

/** An entry as the API answers it: its time as ISO text, and the gate's name where the gate is deployed. */
function answerOf(RED: NodeAPI, entry: HistoryEntry): Record<string, unknown> {
  const node = RED.nodes.getNode(entry.gate) as { name?: unknown } | null;
  const name = typeof node?.name === "string" && node.name !== "" ? node.name : undefined;
  return {
    at: new Date(entry.at).toISOString(),
    gate: entry.gate,
    gate_type: entry.gate_type,
    ...(name !== undefined ? { gate_name: name } : {}),
    outcome: entry.outcome,
    ...(entry.reason !== undefined ? { reason: entry.reason } : {}),
    ...(entry.cap_ids !== undefined ? { cap_ids: entry.cap_ids } : {}),
    ...(entry.retry_after_seconds !== undefined ? { retry_after_seconds: entry.retry_after_seconds } : {}),
  };
}

/**
 * GET /frequency-cap/:config/history?recipient=&org=: the recipient's last
 * verdicts on this cap-config's gates, newest first (`historySize` of them,
 * within its lifetime). Under hashRecipients the store holds them by the
 * recipient's HMAC, made here from the address asked for.
 */
export function registerHistoryRoutes(RED: NodeAPI): void {
  const read = RED.auth.needsPermission("frequency-cap.read");

  RED.httpAdmin.get("/frequency-cap/:config/history", read, route(async (req) => {
    const service = serviceOf(RED, req);
    const recipient = queryText(req, "recipient");
    if (recipient === undefined) throw new HttpError(400, "recipient: is required");
    const org = queryText(req, "org") ?? service.settings.defaultOrg;
    const history = service.history;
    if (!history.enabled) return { body: { org, recipient, size: 0, enabled: false, entries: [] } };
    const entries = await history.read(org, service.recipientToken(recipient));
    return { body: { org, recipient, size: history.size, enabled: true, lifetime_seconds: Math.round(history.lifetimeMs / 1000), entries: entries.map((e) => answerOf(RED, e)) } };
  }));
}
