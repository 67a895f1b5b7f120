import type { GateFields } from "./sendFields";

/**
 * Which send fields each gate decides on, and which it only checks (so a bad
 * send is caught at the first gate of the chain). Matches what each gate's
 * runtime reads (src/nodes/*Gate.ts).
 */
export const gateFields = {
  "frequency-cap-gate": {
    decides: ["recipient", "channel", "category", "tier", "messageId", "org", "attributes", "recipientLimits", "timezone", "expiresAt"],
    checks: [],
  },
  "suppression-gate": {
    decides: ["recipient", "channel", "org", "messageId", "body"],
    checks: ["category", "tier", "attributes", "recipientLimits"],
  },
  // the recipient's zone is msg.timezone: this gate's `timezone` property is its default zone (SPEC §11)
  "quiet-hours-gate": {
    decides: ["category", "tier", "expiresAt"],
    checks: ["recipient", "channel", "messageId", "org"],
  },
  // a ceiling counts msgs, not what they say: it reads what keys it (org, channel), bounds the wait (expiresAt)
  // and gives back earlier claims when it skips (recipient, messageId)
  "throughput-gate": {
    decides: ["org", "channel", "expiresAt"],
    checks: ["recipient", "tier", "messageId"],
  },
} as const satisfies Record<string, GateFields>;
