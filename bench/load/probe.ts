import type { Node } from "node-red";
import type { Admission } from "../../src/core/admission";
import type { CompleteEvent } from "../nodeRed/embeddedRed";
import type { Completions } from "./completions";
import type { BenchMsg } from "./msgSource";
import { claimedCaps } from "./verdicts";

export interface ProbeOptions {
  /** makes the probe msg ids unique */
  tag: string;
  channel: string;
  /** the caps an admitted probe must have claimed */
  capIds: ReadonlySet<string>;
  /** give up after this long (the rules may be loading: a probe before them fails open) */
  timeoutMs?: number;
}

export interface ProbeResult {
  /** probes sent, the last one admitted through the caps */
  attempts: number;
  /** earlier probes that failed open (rules or store not ready yet); not part of any measured run */
  failedOpen: number;
}

const ONE_MSG_MS = 5_000;
const RETRY_MS = 100;

/**
 * Sends one msg at a time (each to a recipient of its own, "+1777…") until one
 * is admitted with a claim on exactly `capIds`: from then on the gate's rules
 * are loaded and in force, so warm-up and measured msgs never fail open for
 * rules that are still on their way.
 */
export async function probeUntilCapped(gate: Node, completions: Completions, options: ProbeOptions): Promise<ProbeResult> {
  const until = performance.now() + (options.timeoutMs ?? 15_000);
  let failedOpen = 0;
  let last = "";
  for (let attempt = 1; ; attempt++) {
    const id = `${options.tag}-${attempt}`;
    const msg: BenchMsg = {
      _msgid: id,
      messageId: id,
      recipient: `+1777${String(attempt).padStart(7, "0")}`,
      channel: options.channel,
      payload: "bench probe",
    };
    const event = await oneMsg(gate, completions, msg);
    const admission = (event.msg as { admission?: Admission }).admission;
    if (event.error) {
      last = `error: ${event.error.message}`;
    } else if (admission?.reason === "fail_open") {
      failedOpen++;
      last = "fail_open";
    } else if (admission?.status === "allowed") {
      const claimed = claimedCaps(admission);
      if (claimed.length === options.capIds.size && claimed.every((c) => options.capIds.has(c))) return { attempts: attempt, failedOpen };
      last = `admitted with caps [${claimed.join(", ")}]`;
    } else {
      last = `${admission?.status ?? "no admission"}${admission?.reason ? ` (${admission.reason})` : ""}`;
    }
    if (performance.now() > until) {
      throw new Error(`no probe msg was admitted through caps [${[...options.capIds].join(", ")}] after ${attempt} tries; last: ${last}`);
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

function oneMsg(gate: Node, completions: Completions, msg: BenchMsg): Promise<CompleteEvent> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`probe msg ${msg._msgid} not done within ${ONE_MSG_MS} ms`)), ONE_MSG_MS);
    completions.expect(msg._msgid, (event) => {
      clearTimeout(timer);
      resolve(event);
    });
    gate.receive(msg);
  });
}
