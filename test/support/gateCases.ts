import assert from "node:assert/strict";
import type { CapService } from "../../src/core/capService";
import type { Msg } from "./nodeRed";

const hhmm = (ms: number): string => new Date(ms).toISOString().slice(11, 16);

/** A UTC quiet window that began two minutes ago and lasts two hours: it holds through any test. */
function windowAroundNow(): { start: string; end: string } {
  const now = Date.now();
  return { start: hhmm(now - 120_000), end: hhmm(now + 2 * 3600_000) };
}

/** A UTC quiet window that begins in two hours: a msg sent now is outside it. */
function windowLater(): { start: string; end: string } {
  const now = Date.now();
  return { start: hhmm(now + 2 * 3600_000), end: hhmm(now + 3 * 3600_000) };
}

/** What a run of a case saw, over every deployment: each msg once, by the output it left, or held. */
export interface Outcome {
  /** messageId → the output it left by (allowed, skipped, deferred, caught) */
  leftBy: Map<string, string>;
  /** messageId → the msg as it left */
  msgs: Map<string, Msg>;
  /** msgs still held in the gate's queue at the end */
  held: number;
  /** msgs sent */
  sent: number;
  /** whether the store failed during the run (verdicts may have failed open then) */
  storeFailed: boolean;
}

export function reasonOfMsg(msg: Msg | undefined): string | undefined {
  return (msg?.admission as { reason?: string } | undefined)?.reason;
}

/** One gate type and mode, as the lifecycle suite runs it in every case. */
export interface GateCase {
  name: string;
  type: "suppression-gate" | "frequency-cap-gate" | "quiet-hours-gate" | "throughput-gate";
  /** the gate's properties beyond `config` and `wires`; made at deploy (quiet windows around the current time) */
  props(): Record<string, unknown>;
  rules?: object[];
  /** the i-th msg of a run: a messageId of its own (`m<i>`) is added */
  msg(i: number): Record<string, unknown>;
  /** before the first msg: what the gate needs in its store (an opt-out list) */
  prepare?(service: CapService, count: number): Promise<void>;
  /** msgs may stay held at the end of a run (their release lies beyond it) */
  holds?: boolean;
  /** what the verdicts must say when the store did not fail (a cap admits exactly its max) */
  verdicts?(outcome: Outcome): void;
}

function countBy(outcome: Outcome, output: string, reason?: (r: string | undefined) => boolean): number {
  let n = 0;
  for (const [id, by] of outcome.leftBy) if (by === output && (!reason || reason(reasonOfMsg(outcome.msgs.get(id))))) n++;
  return n;
}

/** One cap per recipient, two msgs each: exactly half the msgs are allowed, none failed open or overloaded. */
function halfAllowed(outcome: Outcome): void {
  const allowed = countBy(outcome, "allowed");
  const failed = countBy(outcome, "allowed", (r) => r === "fail_open" || r === "overloaded");
  assert.equal(failed, 0, "allowed without a verdict (fail_open or overloaded)");
  assert.equal(allowed, outcome.sent / 2, `${allowed} allowed of ${outcome.sent} under a cap of 1 per recipient, 2 msgs each`);
}

const CAP_ONE = [{ id: "one", scope: "global", max_count: 1, window_seconds: 600 }];

export const GATE_CASES: readonly GateCase[] = [
  {
    name: "suppression-gate",
    type: "suppression-gate",
    props: () => ({ duplicateWindow: 0 }),
    msg: (i) => ({ recipient: `r${i}`, channel: "sms", payload: `hello ${i}` }),
    // every odd recipient opted out
    async prepare(service, count) {
      const at = new Date().toISOString();
      const entries = Array.from({ length: Math.ceil(count / 2) }, (_, k) => ({ org: "default", recipient: `r${2 * k + 1}`, channel: "*", reason: "stop", at }));
      await service.suppression.suppress(entries);
    },
    verdicts(outcome) {
      for (const [id, by] of outcome.leftBy) {
        const odd = Number(id.slice(1)) % 2 === 1;
        // the reason tells a fail-open (a store call cut by the deploy) from an opt-out that was not seen
        assert.equal(by, odd ? "skipped" : "allowed", `${id} left by ${by}, reason ${reasonOfMsg(outcome.msgs.get(id))}`);
      }
    },
  },
  {
    name: "frequency-cap-gate (claim)",
    type: "frequency-cap-gate",
    props: () => ({}),
    rules: CAP_ONE,
    msg: (i) => ({ recipient: `r${i >> 1}`, channel: "sms" }),
    verdicts: halfAllowed,
  },
  {
    name: "frequency-cap-gate (claim, defer)",
    type: "frequency-cap-gate",
    props: () => ({}),
    // the second msg of a recipient waits for the first's slot to free: 2 s
    rules: [{ id: "one-per-2s", scope: "global", max_count: 1, window_seconds: 2, disposition: "defer" }],
    msg: (i) => ({ recipient: `r${i >> 1}`, channel: "sms" }),
    holds: true,
  },
  {
    name: "frequency-cap-gate (check)",
    type: "frequency-cap-gate",
    props: () => ({ mode: "check" }),
    rules: CAP_ONE,
    msg: (i) => ({ recipient: `r${i}`, channel: "sms" }),
  },
  {
    name: "frequency-cap-gate (record)",
    type: "frequency-cap-gate",
    props: () => ({ mode: "record" }),
    rules: CAP_ONE,
    msg: (i) => ({ recipient: `r${i}`, channel: "sms" }),
  },
  {
    name: "frequency-cap-gate (release)",
    type: "frequency-cap-gate",
    props: () => ({ mode: "release" }),
    rules: CAP_ONE,
    msg: (i) => ({ recipient: `r${i}`, channel: "sms" }),
  },
  {
    name: "quiet-hours-gate (defer, in the window, half exempt)",
    type: "quiet-hours-gate",
    props: () => ({ ...windowAroundNow(), timezone: "UTC", jitter: 0, disposition: "defer" }),
    msg: (i) => ({ recipient: `r${i}`, channel: "sms", ...(i % 2 === 0 ? { tier: "P0" } : {}) }),
    holds: true,
  },
  {
    name: "quiet-hours-gate (skip, in the window, half exempt)",
    type: "quiet-hours-gate",
    props: () => ({ ...windowAroundNow(), timezone: "UTC", jitter: 0, disposition: "skip" }),
    msg: (i) => ({ recipient: `r${i}`, channel: "sms", ...(i % 2 === 0 ? { tier: "P0" } : {}) }),
    verdicts(outcome) {
      for (const [id, by] of outcome.leftBy) assert.equal(by, Number(id.slice(1)) % 2 === 0 ? "allowed" : "skipped", `${id} left by ${by}`);
    },
  },
  {
    name: "quiet-hours-gate (outside the window)",
    type: "quiet-hours-gate",
    props: () => ({ ...windowLater(), timezone: "UTC", jitter: 0, disposition: "defer" }),
    msg: (i) => ({ recipient: `r${i}`, channel: "sms" }),
    verdicts(outcome) {
      assert.equal(countBy(outcome, "allowed"), outcome.sent);
    },
  },
  {
    name: "throughput-gate (skip)",
    type: "throughput-gate",
    props: () => ({ rate: 1000, burst: 500, disposition: "skip" }),
    msg: (i) => ({ recipient: `r${i}`, channel: "sms" }),
  },
  {
    name: "throughput-gate (queue)",
    type: "throughput-gate",
    props: () => ({ rate: 2000, burst: 500, disposition: "queue", maxWait: 60 }),
    msg: (i) => ({ recipient: `r${i}`, channel: "sms" }),
  },
];
