import type { NodeMessage } from "node-red";
import type { DeferInput, DeferredMsg } from "../core/defer";
import type { Deferrals } from "../core/deferral/deferrals";
import { parkedMsgId, releaseId } from "../core/deferral/deferralIds";
import { GATE_OUTPUTS, type GateOutput } from "../core/metrics/labels";
import { storedMsg } from "./holding";
import type { AdmittedMsg } from "./refusal";

/** The meta field that marks a parked msg, and names the output it leaves by. */
const LEAVES_BY = "leavesBy";

/**
 * A msg a gate had judged but could not send because it was closing (Node-RED
 * drops what a stopped flow is sent), kept in the gate's durable queue: due
 * at once, it leaves by the same output, as it is, when the gate runs again
 * (a redeploy's new instance, or a restart). It carries a release_id, as a
 * held msg does, so a release repeated after a lost ack is recognisable.
 * `keepMs`: how long it waits for a gate that runs nowhere before it is dropped.
 */
export function parkedEntries(gate: string, out: NodeMessage | (NodeMessage | null)[], now: number, keepMs: number): DeferInput[] {
  const byOutput: [NodeMessage | null | undefined, GateOutput][] = Array.isArray(out)
    ? GATE_OUTPUTS.map((output, i) => [out[i], output])
    : [[out, "allowed"]];
  return byOutput.flatMap(([msg, output]) => {
    if (!msg) return [];
    const entry: DeferInput & { id: string } = {
      id: parkedMsgId(), gate, dueAt: now, deferrals: 1, firstDeferredAt: now, deadline: now + keepMs,
      msg: storedMsg(msg as AdmittedMsg), meta: { [LEAVES_BY]: output },
    };
    const admission = entry.msg.admission as { release_id?: unknown } | undefined;
    if (admission && typeof admission === "object" && admission.release_id === undefined) admission.release_id = releaseId(entry);
    return [entry];
  });
}

/** The output a parked msg leaves by, or undefined for any other held msg. */
export function parkedOutput(held: DeferredMsg): GateOutput | undefined {
  const output = held.meta?.[LEAVES_BY];
  return (GATE_OUTPUTS as readonly string[]).includes(output ?? "") ? output as GateOutput : undefined;
}

/** A parked msg as its gate sends it: on the output it was judged for. */
export function parkedSend(output: GateOutput, msg: NodeMessage): (NodeMessage | null)[] {
  return GATE_OUTPUTS.map((o) => (o === output ? msg : null));
}

/**
 * How long a parked msg waits for its gate to run again (a tab disabled, a
 * flow removed) before the queue drops it, reporting it: as long as a held
 * msg's default deferMax.
 */
export const PARKED_KEEP_MS = 6 * 3600_000;

/** A gate's parkOnClose (serveGate): the msgs of one output call into its durable queue, or an Error saying why not. */
export function parkInQueue(deferrals: Pick<Deferrals, "handBack">, gate: string): (out: NodeMessage | (NodeMessage | null)[]) => Promise<void> {
  return async (out) => {
    const entries = parkedEntries(gate, out, Date.now(), PARKED_KEEP_MS);
    const failed = await deferrals.handBack(gate, entries.map((entry) => ({ entry })));
    if (failed) throw failed.error;
  };
}
