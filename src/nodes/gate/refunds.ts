import type { Node, NodeAPI } from "node-red";
import type { AdmissionClaim } from "../../core/admission";
import type { CapConfigNode } from "./capConfigNode";

/** The msg whose claims are given back: its recipient and org as the gate read them. */
export interface ClaimHolder {
  recipient: string;
  org?: string;
}

/**
 * Gives back every claim earlier gates recorded on a msg, each in the store of
 * the cap-config that made it. Returns how many claims gave something back
 * (the trail's `refunded`), and the claims that could not be given back
 * (their config is gone or its store failed): they stay on the msg, since they
 * are still held. Claims that are not this msg's own (copied or rewritten in
 * the flow) are dropped with a warning, never executed.
 */
export async function refundClaims(RED: NodeAPI, node: Node, claims: readonly AdmissionClaim[], holder: ClaimHolder): Promise<{ refunded: number; kept: AdmissionClaim[] }> {
  const byConfig = new Map<string, AdmissionClaim[]>();
  const kept: AdmissionClaim[] = [];
  for (const claim of claims) {
    const config = (claim as Partial<AdmissionClaim> | null)?.config;
    if (typeof config !== "string") {
      node.warn(`ignored a claim on msg.admission.claims that this package did not write: ${JSON.stringify(claim)?.slice(0, 200)}`);
      continue;
    }
    byConfig.set(config, [...(byConfig.get(config) ?? []), claim]);
  }
  let refunded = 0;
  for (const [configId, own] of byConfig) {
    const service = (RED.nodes.getNode(configId) as CapConfigNode | null)?.service;
    if (!service) {
      node.warn(`could not give back ${own.length} claim(s): cap-config ${configId} is not deployed`);
      kept.push(...own);
      continue;
    }
    try {
      // what the store gave back: a claim given back before (a msg released twice, or its copy) counts nothing
      const { claimsGiven, refused } = await service.release(own, holder);
      refunded += claimsGiven;
      if (refused.length > 0) {
        node.warn(`ignored ${refused.length} claim(s) on msg.admission.claims that are not this msg's own in cap-config ${configId} (another recipient's keys, or not written by this package): ${JSON.stringify(refused[0])?.slice(0, 200)}`);
      }
    } catch (err) {
      node.warn(`could not give back ${own.length} claim(s) in cap-config ${configId}: ${(err as Error).message}`);
      kept.push(...own);
    }
  }
  return { refunded, kept };
}
