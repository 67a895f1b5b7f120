import type { NodeAPI } from "node-red";
import { SendFieldError } from "../../core/errors";
import { parseSuppressionEntry, parseSuppressionImport, type SuppressionEntry } from "../../core/suppression/suppressionEntry";
import { HttpError, route, serviceOf, textBody, type AdminRequest } from "./http";

const PATH = "/frequency-cap/:config/suppressions";

function isCsv(req: AdminRequest): boolean {
  return String(req.headers["content-type"] ?? "").startsWith("text/");
}

/** The entries a POST or DELETE carries: one JSON entry, a JSON array, or CSV text; 400 naming every bad row. */
async function entriesOf(req: AdminRequest, rules: { channels: readonly string[]; defaultOrg: string }): Promise<SuppressionEntry[]> {
  const body = isCsv(req) ? await textBody(req) : req.body;
  if (body !== null && typeof body === "object" && !Array.isArray(body) && Object.keys(body).length > 0) {
    try {
      return [parseSuppressionEntry(body as Record<string, unknown>, rules, new Date())];
    } catch (err) {
      if (err instanceof SendFieldError) throw new HttpError(400, err.message, [err.message]);
      throw err;
    }
  }
  const { entries, problems } = parseSuppressionImport(body, rules, new Date());
  if (problems.length > 0) throw new HttpError(400, `${problems.length} invalid entr${problems.length === 1 ? "y" : "ies"}; nothing was changed`, problems);
  if (entries.length === 0) throw new HttpError(400, "no entries in the body");
  return entries;
}

/** GET / POST / DELETE /frequency-cap/:config/suppressions (SPEC §7, §8). */
export function registerSuppressionRoutes(RED: NodeAPI): void {
  const read = RED.auth.needsPermission("frequency-cap.read");
  const write = RED.auth.needsPermission("frequency-cap.write");

  RED.httpAdmin.get(PATH, read, route(async (req) => {
    const service = serviceOf(RED, req);
    await service.adminReady();
    const org = typeof req.query.org === "string" && req.query.org !== "" ? req.query.org : service.settings.defaultOrg;
    const cursor = typeof req.query.cursor === "string" && req.query.cursor !== "" ? req.query.cursor : "0";
    if (!/^\d{1,20}$/.test(cursor)) throw new HttpError(400, "cursor: must be the cursor an earlier page answered (digits)");
    const count = Math.min(Math.max(Number(req.query.count) || 500, 1), 5000);
    return { body: await service.suppression.list(org, cursor, count) };
  }));

  RED.httpAdmin.post(PATH, write, route(async (req) => {
    const service = serviceOf(RED, req);
    const entries = await entriesOf(req, service.sendRules);
    await service.adminReady();
    const { written, repeatsMerged } = await service.suppression.suppress(entries);
    return { status: 201, body: { suppressed: written, ...(repeatsMerged > 0 ? { repeats_merged: repeatsMerged } : {}) } };
  }));

  RED.httpAdmin.delete(PATH, write, route(async (req) => {
    const service = serviceOf(RED, req);
    const fromQuery = typeof req.query.recipient === "string" ? [parseSuppressionEntry(req.query, service.sendRules, new Date())] : undefined;
    const entries = fromQuery ?? await entriesOf(req, service.sendRules);
    await service.adminReady();
    const { written, repeatsMerged } = await service.suppression.unsuppress(entries);
    return { body: { unsuppressed: written, ...(repeatsMerged > 0 ? { repeats_merged: repeatsMerged } : {}) } };
  }));
}
