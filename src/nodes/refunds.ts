import type { Node, NodeAPI } from "node-red";
import type { AdmissionClaim } from "../core/admission";
import type { CapConfigNode } from "./capConfig";

/**
 * Gives back every claim earlier gates recorded on a msg, each in the store of
 * the cap-config that made it (one atomic release per store). Returns the
 * claims that could not be given back (their config is gone or its store
 * failed): they stay on the msg, since they are still held.
 */
export async function refundClaims(RED: NodeAPI, node: Node, claims: readonly AdmissionClaim[]): Promise<{ refunded: number; kept: AdmissionClaim[] }> {
  const byConfig = new Map<string, AdmissionClaim[]>();
  for (const claim of claims) byConfig.set(claim.config, [...(byConfig.get(claim.config) ?? []), claim]);
  let refunded = 0;
  const kept: AdmissionClaim[] = [];
  for (const [configId, own] of byConfig) {
    const service = (RED.nodes.getNode(configId) as CapConfigNode | null)?.service;
    if (!service) {
      node.warn(`could not give back ${own.length} claim(s): cap-config ${configId} is not deployed`);
      kept.push(...own);
      continue;
    }
    try {
      await service.release(own);
      refunded += own.length;
    } catch (err) {
      node.warn(`could not give back ${own.length} claim(s) in cap-config ${configId}: ${(err as Error).message}`);
      kept.push(...own);
    }
  }
  return { refunded, kept };
}
