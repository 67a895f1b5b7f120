import type { NodeAPI } from "node-red";
import type { CapService } from "../../core/capService";
import { SendFieldError, StoreUnavailableError } from "../../core/errors";
import { RulesUnavailableError } from "../../core/rules/errors";
import { boundedTextProblem } from "../../core/send";
import type { CapConfigNode } from "../gate/capConfigNode";

/** The slice of express's request and response the admin routes use. */
export interface AdminRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body?: unknown;
  headers: Record<string, string | string[] | undefined>;
  on(event: "data", listener: (chunk: Buffer) => void): void;
  on(event: "end" | "error", listener: (err?: Error) => void): void;
  readable?: boolean;
}

export interface AdminResponse {
  status(code: number): AdminResponse;
  json(body: unknown): void;
}

/** An error an admin route answers with its HTTP status. */
export class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly details?: unknown) {
    super(message);
  }
}

/** The deployed cap-config a route names, or 404. */
export function serviceOf(RED: NodeAPI, req: AdminRequest): CapService {
  const config = RED.nodes.getNode(req.params.config ?? "") as CapConfigNode | null;
  if (!config || (config as unknown as { type?: string }).type !== "cap-config") {
    throw new HttpError(404, `no deployed cap-config "${req.params.config}"`);
  }
  if (!config.service) throw new HttpError(409, `cap-config "${req.params.config}" is not usable: ${config.problem?.message ?? "closed"}`);
  return config.service;
}

/** A query text: absent (undefined), or one non-blank text within the send field bounds; 400 naming the field otherwise. */
export function queryText(req: AdminRequest, field: "recipient" | "org"): string | undefined {
  if (!Object.hasOwn(req.query, field)) return undefined;
  const value = req.query[field];
  if (typeof value !== "string") throw new HttpError(400, `${field}: must be given once, as text`);
  if (value.trim() === "") throw new HttpError(400, `${field}: must not be blank`);
  const problem = boundedTextProblem(value);
  if (problem !== undefined) throw new HttpError(400, `${field}: ${problem}`);
  return value;
}

/** A text body (CSV) that the admin app's JSON parser left alone. */
export function textBody(req: AdminRequest, limitBytes = 20 * 1024 * 1024): Promise<string> {
  if (typeof req.body === "string") return Promise.resolve(req.body);
  if (req.readable === false) return Promise.resolve("");
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > limitBytes) reject(new HttpError(413, `body over ${limitBytes} bytes`));
      else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", (err) => reject(err ?? new Error("request failed")));
  });
}

/** Wraps an async route: answers its result as JSON, or its error with the right status. */
export function route(handler: (req: AdminRequest) => Promise<{ status?: number; body: unknown }>) {
  return (req: AdminRequest, res: AdminResponse): void => {
    handler(req).then(
      (result) => res.status(result.status ?? 200).json(result.body),
      (err: Error) => {
        const status = err instanceof HttpError ? err.status
          : err instanceof SendFieldError ? 400
            : err instanceof StoreUnavailableError || err instanceof RulesUnavailableError ? 503 : 500;
        res.status(status).json({ error: err.message, ...(err instanceof HttpError && err.details ? { details: err.details } : {}) });
      },
    );
  };
}
