import type { Node, NodeAPI, NodeMessageInFlow } from "node-red";
import { httpRefusal, markRefunded, type Admission } from "../../core/admission";
import type { CapService } from "../../core/capService";
import type { GateStatus } from "./status";
import { refundClaims, type ClaimHolder } from "./refunds";

export type AdmittedMsg = NodeMessageInFlow & { admission?: Admission; statusCode?: number; headers?: Record<string, string> };

export interface RefusalContext {
  RED: NodeAPI;
  node: Node;
  gate: string;
  service: CapService;
  status: GateStatus;
  httpResponse: boolean;
}

/**
 * What every gate does with a msg it skips: give back what earlier gates
 * claimed for it, warn when an exempt tier was refused (it means something is
 * misclassified), and in HTTP mode shape the 429 reply.
 */
export async function prepareRefusal(ctx: RefusalContext, msg: AdmittedMsg, admission: Admission, send: ClaimHolder & { tier?: string }): Promise<void> {
  msg.admission = admission;
  await giveBackClaims(ctx, admission, send);
  const tier = send.tier;
  if (ctx.service.isExempt(tier)) {
    ctx.node.warn(`an exempt ${String(tier)} msg was skipped by ${ctx.gate} (${String(admission.reason)}): exempt sends should never be refused, check how this one is classified`);
  }
  if (ctx.httpResponse) {
    const reply = httpRefusal(admission);
    msg.statusCode = reply.statusCode;
    msg.headers = { ...(msg.headers ?? {}), ...reply.headers };
    msg.payload = reply.payload;
  }
  ctx.status.skipped();
}

/** Gives back what earlier gates claimed for a msg this gate refuses or holds (SPEC §5, §6). */
export async function giveBackClaims(ctx: Pick<RefusalContext, "RED" | "node">, admission: Admission, holder: ClaimHolder): Promise<void> {
  if (admission.claims.length === 0) return;
  const { refunded, kept } = await refundClaims(ctx.RED, ctx.node, admission.claims, holder);
  markRefunded(admission, refunded);
  admission.claims = kept;
}
