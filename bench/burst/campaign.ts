import type { Node } from "node-red";
import { collectGarbage } from "../../test/support/gc";
import type { Completions } from "../load/completions";
import { PlaceTally } from "../load/placeTally";
import type { Verdicts } from "../load/verdicts";
import { deployGate } from "../nodeRed/deploy";
import type { EmbeddedRed } from "../nodeRed/embeddedRed";
import { CHANNEL, type InlineRule } from "../scenarios";

/** The campaign's one cap: one msg per recipient an hour. Every recipient gets two, so exactly half are allowed. */
export const CAMPAIGN_CAP: InlineRule = { id: "campaign", scope: "channel", channel: CHANNEL, max_count: 1, window_seconds: 3_600 };

export interface CampaignOptions {
  /** cap-config fields that put it on its store (store, redisUrl or redisNodes); everything else is left at its default */
  store: Record<string, unknown>;
  keyPrefix: string;
  msgs: number;
  /** an unmeasured burst of this many msgs to other recipients first (V8 compiles the gate's code) */
  warmUp?: number;
}

export interface CampaignResult {
  msgs: number;
  drainMs: number;
  msgsPerSec: number;
  verdicts: Verdicts;
  /** heap the burst took while it waited in the gate, beyond the msgs themselves, per msg */
  waitingBytesPerMsg: number;
  /** the most heap in use from the burst's hand-over to its last verdict, msgs included */
  peakHeapMb: number;
  /** the heap in use before the hand-over, the burst's msgs built, MB */
  baseHeapMb: number;
}

type CampaignMsg = { _msgid: string; recipient: string; channel: string; messageId: string; payload: string; seq: number };

function campaignMsgs(tag: string, count: number): CampaignMsg[] {
  const msgs = new Array<CampaignMsg>(count);
  for (let i = 0; i < count; i++) {
    // each recipient twice, the second far from the first (a campaign's list, sent twice)
    const r = i % (count / 2);
    msgs[i] = { _msgid: `${tag}-${i}`, recipient: `+1555${tag}${r}`, channel: CHANNEL, messageId: `${tag}-${i}`, payload: `Your weekly offer, ${r}`, seq: i };
  }
  return msgs;
}

/**
 * A campaign in one tick: `msgs` msgs (each recipient twice, one cap of 1)
 * handed to a frequency-cap-gate whose cap-config keeps every default
 * (timeoutMs, maxQueued, fail and overload modes), as a split node would hand
 * them. Measures the drain, the heap the waiting msgs cost beyond themselves
 * (a full collection right after the hand-over, before the gate begins any:
 * the gate begins msgs on the next microtask), and the peak heap.
 */
export async function runCampaign(red: EmbeddedRed, completions: Completions, options: CampaignOptions): Promise<CampaignResult> {
  const tag = options.keyPrefix.replace(/[^a-z0-9]/gi, "").slice(-8);
  const flow = {
    gateId: `campaign-gate-${tag}`,
    configId: `campaign-cfg-${tag}`,
    nodes: [
      { id: `campaign-tab-${tag}`, type: "tab", label: "campaign" },
      { id: `campaign-cfg-${tag}`, type: "cap-config", name: "campaign", ...options.store, keyPrefix: options.keyPrefix, rules: [CAMPAIGN_CAP] },
      { id: `campaign-gate-${tag}`, type: "frequency-cap-gate", z: `campaign-tab-${tag}`, config: `campaign-cfg-${tag}`, x: 200, y: 100, wires: [[], [], []] },
    ],
  };
  const { gate } = await deployGate(red, flow);
  if (options.warmUp) await drain(gate, completions, campaignMsgs(`w${tag}`, options.warmUp));
  let msgs: CampaignMsg[] | undefined = campaignMsgs(`m${tag}`, options.msgs);
  collectGarbage();
  const base = process.memoryUsage().heapUsed;
  let peak = base;
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().heapUsed); }, 20);
  let waiting = 0;
  const began = performance.now();
  const drained = drain(gate, completions, msgs, () => {
    collectGarbage();
    waiting = process.memoryUsage().heapUsed - base;
    peak = Math.max(peak, base + waiting);
  });
  // the gate holds them now: kept here, each would keep its admission alive to the end
  msgs = undefined;
  const verdicts = await drained;
  const drainMs = performance.now() - began;
  clearInterval(sampler);
  return {
    msgs: options.msgs, drainMs, msgsPerSec: options.msgs / (drainMs / 1000), verdicts,
    waitingBytesPerMsg: waiting / options.msgs, peakHeapMb: peak / 2 ** 20, baseHeapMb: base / 2 ** 20,
  };
}

/** Hands every msg to the gate in one tick (`handedOver` runs right after, in the same tick) and resolves with the verdicts once each completed once. */
async function drain(gate: Node, completions: Completions, msgs: CampaignMsg[], handedOver?: () => void): Promise<Verdicts> {
  const run = new PlaceTally(msgs.length, "campaign");
  const stop = completions.watchNode(gate.id, run);
  for (let i = 0; i < msgs.length; i++) gate.receive(msgs[i]);
  handedOver?.();
  msgs.length = 0;
  await run.finished;
  stop();
  return run.verdicts;
}

/** What a campaign row must show: each recipient's first msg allowed, its second skipped, nothing else. */
export function campaignProblems(result: CampaignResult): string[] {
  const v = result.verdicts;
  const half = result.msgs / 2;
  const problems: string[] = [];
  if (v.allowed !== half) problems.push(`${v.allowed} allowed, not ${half}`);
  if (v.skipped !== half) problems.push(`${v.skipped} skipped, not ${half}`);
  if (v.failOpen + v.overloaded + v.errors > 0) problems.push(`${v.failOpen} fail_open, ${v.overloaded} overloaded, ${v.errors} errors${v.firstError ? ` (${v.firstError})` : ""}`);
  return problems;
}
