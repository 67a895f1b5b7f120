import type { NodeAPI } from "node-red";
import { heldByGate, heldMatching, holderMatcher } from "../../core/hold/heldListing";
import { HttpError, queryText, route, serviceOf } from "./http";

/** The gates that hold msgs: listed while deployed, even with none held (any other gate only while its queue holds some, parked msgs). */
const HOLDING_TYPES: ReadonlySet<string> = new Set(["frequency-cap-gate", "quiet-hours-gate", "throughput-gate"]);

/**
 * GET /frequency-cap/:config/held (SPEC §6): per gate of the cap-config that
 * holds msgs, how many and when the next is due; with `?recipient=` (and
 * `org`), that recipient's held msgs, without their bodies, from a scan of at
 * most HELD_SCAN_LIMIT held msgs (`scanned`, `complete`).
 */
export function registerHeldRoutes(RED: NodeAPI): void {
  const read = RED.auth.needsPermission("frequency-cap.read");

  RED.httpAdmin.get("/frequency-cap/:config/held", read, route(async (req) => {
    const service = serviceOf(RED, req);
    const recipient = queryText(req, "recipient");
    const org = queryText(req, "org");
    if (org !== undefined && recipient === undefined) throw new HttpError(400, "recipient: is required with org");
    const deferrals = service.deferrals;
    const gates = await deferrals.knownGates();
    const queueOf = (gate: string) => deferrals.queueOf(gate);
    if (recipient === undefined) {
      const rows = await heldByGate(gates, queueOf);
      const typeOf = (gate: string) => (RED.nodes.getNode(gate) as { type?: string } | null)?.type ?? "";
      return { body: { gates: rows.filter((row) => row.count > 0 || HOLDING_TYPES.has(typeOf(row.gate))) } };
    }
    const matches = holderMatcher({
      org: org ?? service.settings.defaultOrg,
      recipientToken: service.recipientToken(recipient),
      tokenOf: (r) => service.recipientToken(r),
      defaultOrg: service.settings.defaultOrg,
    });
    return { body: await heldMatching(gates, queueOf, matches) };
  }));
}
