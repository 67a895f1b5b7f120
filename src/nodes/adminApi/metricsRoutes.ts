import type { NodeAPI } from "node-red";
import { HttpError, serviceOf, type AdminRequest } from "./http";

/** The slice of express's response a text route uses. */
interface TextResponse {
  status(code: number): TextResponse;
  set(field: string, value: string): TextResponse;
  send(body: string): void;
  json(body: unknown): void;
}

/**
 * GET /frequency-cap/:config/metrics (SPEC §7): the cap-config's metrics in
 * the Prometheus text format, from its own registry, under frequency-cap.read
 * (a scraper authenticates as any admin API client does: a bearer token of a
 * user with that permission).
 */
export function registerMetricsRoutes(RED: NodeAPI): void {
  const read = RED.auth.needsPermission("frequency-cap.read");
  RED.httpAdmin.get("/frequency-cap/:config/metrics", read, (req: AdminRequest, res: TextResponse) => {
    let metrics;
    try {
      metrics = serviceOf(RED, req).metrics;
    } catch (err) {
      res.status(err instanceof HttpError ? err.status : 500).json({ error: (err as Error).message });
      return;
    }
    metrics.text().then(
      (text) => { res.status(200).set("Content-Type", metrics.contentType).send(text); },
      (err: Error) => { res.status(500).json({ error: `metrics: ${err.message}` }); },
    );
  });
}
