import { AdmissionMetrics } from "../../src/core/metrics/admissionMetrics";
import { RuleCacheStats } from "../../src/core/rules/ruleCache";
import { parsePrometheusText } from "./promText";

/** A metric family a cap-config serves: its type and every label its series carry. */
export interface ExportedFamily {
  type: string;
  labels: ReadonlySet<string>;
}

/**
 * Every metric family a cap-config serves, read from the exposition of a real
 * AdmissionMetrics registry fed one event of each kind (so every labelled
 * family has a series to show its labels). The labels a scrape adds (job,
 * instance) are added here, since the shipped rules and dashboard use them.
 */
export async function exportedFamilies(): Promise<Map<string, ExportedFamily>> {
  const metrics = new AdmissionMetrics({ configId: "cfg", store: "redis", rulesSource: "postgres", failMode: "open", maxQueued: 10 });
  metrics.watch({
    storeState: () => "ready",
    rulesState: () => "ok",
    queueLength: () => 0,
    circuit: () => ({ state: "closed", opens: 0 }),
    held: () => Promise.resolve(new Map([["g", 1]])),
    ruleCache: new RuleCacheStats(),
  });
  const gate = metrics.gate("g", "frequency-cap-gate");
  gate.leftBy("skipped", "frequency_capped");
  gate.failed(new Error("bad"));
  gate.heldFor("frequency_capped");
  gate.wouldRefuse("trial", undefined);
  metrics.storeCall({ lane: "claim", items: 1, ms: 1, result: "ok" });
  const families = new Map<string, ExportedFamily>();
  for (const [name, family] of parsePrometheusText(await metrics.text())) {
    const labels = new Set(["job", "instance"]);
    for (const s of family.samples) for (const label of Object.keys(s.labels)) labels.add(label);
    families.set(name, { type: family.type, labels });
  }
  return families;
}
