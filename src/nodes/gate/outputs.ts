import type { NodeMessage } from "node-red";
import type { Admission } from "../../core/admission";
import type { GateCounts } from "../../core/metrics/gateCounts";
import { GATE_OUTPUTS } from "../../core/metrics/labels";

/** What a gate hands node.send: one msg (its first output), or one per output. */
export type Outputs = NodeMessage | (NodeMessage | null)[];

/**
 * The reason a gate gave a msg it sends out: the last trail entry is the
 * gate's own (every gate writes one before it sends), so what an earlier gate
 * or the flow wrote is never counted as this gate's.
 */
function reasonOf(msg: NodeMessage): unknown {
  const admission = (msg as { admission?: Partial<Admission> }).admission;
  const trail = Array.isArray(admission?.trail) ? admission.trail : undefined;
  const last = trail?.[trail.length - 1];
  return last ? last.reason : admission?.reason;
}

/** Counts each msg of `out` by the output it leaves (allowed, skipped, deferred), by the reason its gate gave. */
export function countOutputs(counts: GateCounts, out: Outputs): void {
  if (!Array.isArray(out)) {
    if (out) counts.leftBy("allowed", reasonOf(out));
    return;
  }
  for (let i = 0; i < out.length; i++) {
    const msg = out[i];
    const output = GATE_OUTPUTS[i];
    if (msg && output) counts.leftBy(output, reasonOf(msg));
  }
}
