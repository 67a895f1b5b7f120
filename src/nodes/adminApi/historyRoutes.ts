import type { NodeAPI } from "node-red";
import { gateTag, isGateTag, type HistoryEntry } from "../../core/history/historyEntry";
import { HttpError, queryText, route, serviceOf } from "./http";

/** The deployed nodes by the tag an entry keeps of a long gate id (gateTag), made once a read meets a tag. */
function deployedByTag(RED: NodeAPI): Map<string, string> {
  const byTag = new Map<string, string>();
  RED.nodes.eachNode((node) => { byTag.set(gateTag(node.id), node.id); });
  return byTag;
}

/** An entry as the API answers it: its time as ISO text, and the gate's id (for a tag, the deployed gate's) and name where it is deployed. */
function answerOf(RED: NodeAPI, entry: HistoryEntry, tags: () => Map<string, string>): Record<string, unknown> {
  const gate = isGateTag(entry.gate) ? tags().get(entry.gate) ?? entry.gate : entry.gate;
  const node = RED.nodes.getNode(gate) as { name?: unknown } | null;
  const name = typeof node?.name === "string" && node.name !== "" ? node.name : undefined;
  return {
    at: new Date(entry.at).toISOString(),
    gate,
    gate_type: entry.gate_type,
    ...(name !== undefined ? { gate_name: name } : {}),
    outcome: entry.outcome,
    ...(entry.reason !== undefined ? { reason: entry.reason } : {}),
    ...(entry.cap_ids !== undefined ? { cap_ids: entry.cap_ids } : {}),
    ...(entry.cap_ids_left_out !== undefined ? { cap_ids_left_out: entry.cap_ids_left_out } : {}),
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
    let byTag: Map<string, string> | undefined;
    const tags = (): Map<string, string> => (byTag ??= deployedByTag(RED));
    return { body: { org, recipient, size: history.size, enabled: true, lifetime_seconds: Math.round(history.lifetimeMs / 1000), entries: entries.map((e) => answerOf(RED, e, tags)) } };
  }));
}
