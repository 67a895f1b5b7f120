import type { NodeAPI } from "node-red";
import { ADMIN_WAIT_MS, type CapService } from "../../core/capService";
import { RuleValidationError } from "../../core/errors";
import { RuleConflictError, RulesUnavailableError } from "../../core/rules/errors";
import { PostgresRules } from "../../postgres/postgresRules";
import type { PgRuleSource } from "../../postgres/ruleSource";
import { InlineRules } from "../../core/rules/rulesProvider";
import { plainText } from "../../core/plainText";
import { parseSend, readAttributes, sendOrg } from "../../core/send";
import { HttpError, route, serviceOf, type AdminRequest } from "./http";

const CAPS = "/frequency-cap/:config/caps";

function orgOf(req: AdminRequest, service: CapService): string {
  const fromBody = (req.body as { org?: unknown } | undefined)?.org;
  if (typeof req.query.org === "string" && req.query.org !== "") return plainText("org", req.query.org);
  if (typeof fromBody === "string" && fromBody !== "") return plainText("org", fromBody);
  return service.settings.defaultOrg;
}

/** `?attributes=` as JSON text, parsed (not yet checked); absent when not given. */
function attributesQuery(req: AdminRequest): unknown {
  if (typeof req.query.attributes !== "string") return undefined;
  try {
    return JSON.parse(req.query.attributes) as unknown;
  } catch {
    throw new HttpError(400, "attributes: must be a JSON object of strings");
  }
}

/** The cap id a route names: text a stored rule can have. */
function idOf(req: AdminRequest): string {
  return plainText("id", req.params.id ?? "");
}

/**
 * Inline rules are part of the deployed flow: an API edit would vanish at the
 * next deploy and differ between instances, so writes are refused (409).
 */
async function pgSourceOf(service: CapService): Promise<PgRuleSource> {
  if (!(service.rules instanceof PostgresRules)) {
    throw new HttpError(409, "this cap-config has inline rules: they are edited in the cap-config node and deployed with the flow; use rulesSource postgres to edit caps through the API");
  }
  try {
    return await service.rules.whenOpen(ADMIN_WAIT_MS);
  } catch (err) {
    throw new HttpError(503, (err as Error).message);
  }
}

/** Maps the rule store's errors onto HTTP: every schema problem 400, a taken id 409, a database down 503. */
async function writing<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof RuleValidationError) throw new HttpError(400, "invalid frequency cap", err.problems);
    if (err instanceof RuleConflictError) throw new HttpError(409, err.message);
    if (err instanceof RulesUnavailableError) throw new HttpError(503, err.message);
    throw err;
  }
}

/** GET/POST …/caps, PUT/DELETE …/caps/:id, GET …/usage, GET …/totals (SPEC §7). */
export function registerCapRoutes(RED: NodeAPI): void {
  const read = RED.auth.needsPermission("frequency-cap.read");
  const write = RED.auth.needsPermission("frequency-cap.write");

  RED.httpAdmin.get(CAPS, read, route(async (req) => {
    const service = serviceOf(RED, req);
    const org = orgOf(req, service);
    if (service.rules instanceof InlineRules) {
      return { body: { source: "inline", org, rules: service.rules.rules.filter((r) => r.org === undefined || r.org === org) } };
    }
    const source = await pgSourceOf(service);
    const listing = await writing(() => source.list(org));
    return { body: { source: "postgres", org, rules: listing.rules, invalid: listing.invalid } };
  }));

  RED.httpAdmin.post(CAPS, write, route(async (req) => {
    const service = serviceOf(RED, req);
    const source = await pgSourceOf(service);
    const rule = await writing(() => source.create(orgOf(req, service), req.body));
    return { status: 201, body: rule };
  }));

  RED.httpAdmin.put(`${CAPS}/:id`, write, route(async (req) => {
    const service = serviceOf(RED, req);
    const source = await pgSourceOf(service);
    const rule = await writing(() => source.update(orgOf(req, service), idOf(req), req.body));
    if (!rule) throw new HttpError(404, `no cap "${req.params.id}" in org "${orgOf(req, service)}"`);
    return { body: rule };
  }));

  RED.httpAdmin.delete(`${CAPS}/:id`, write, route(async (req) => {
    const service = serviceOf(RED, req);
    const source = await pgSourceOf(service);
    const removed = await writing(() => source.remove(orgOf(req, service), idOf(req)));
    if (!removed) throw new HttpError(404, `no cap "${req.params.id}" in org "${orgOf(req, service)}"`);
    return { body: { deleted: removed } };
  }));

  RED.httpAdmin.get("/frequency-cap/:config/usage", read, route(async (req) => {
    const service = serviceOf(RED, req);
    const send = parseSend({
      recipient: req.query.recipient, channel: req.query.channel, org: req.query.org, attributes: attributesQuery(req), messageId: "usage",
    }, service.sendRules);
    const caps = await writing(() => service.engine.usage(send));
    return { body: { org: send.org, recipient: send.recipient, channel: send.channel, caps } };
  }));

  // every total cap of the org: what the editor's rules table shows beside a total cap's row
  RED.httpAdmin.get("/frequency-cap/:config/totals", read, route(async (req) => {
    const service = serviceOf(RED, req);
    const org = sendOrg(req.query.org, service.sendRules);
    const attributes = readAttributes(attributesQuery(req));
    const caps = await writing(() => service.engine.totalUsage(org, service.settings.channels, attributes));
    return { body: { org, caps } };
  }));
}
