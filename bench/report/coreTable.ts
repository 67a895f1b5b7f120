import type { CoreRows, CoreRun } from "../core/measureCore";
import type { ClaimInstructions } from "../core/claimInstructions";
import { renderTable, whole } from "./markdown";

const HEADER = ["claim", "caps", "claims/s", "÷ rate-limiter-flexible", "Redis CPU µs/claim", "allowed", "leaked points", "recipients over cap"];
const RIGHT = [false, false, true, true, true, true, true, true];

function line(name: string, caps: string, run: CoreRun, other?: CoreRun): string[] {
  return [name, caps, whole.format(run.perSec), other ? (run.perSec / other.perSec).toFixed(2) : "—", run.redisCpuUsPerClaim.toFixed(1),
    whole.format(run.allowed), whole.format(run.leaked), whole.format(run.overCap)];
}

/** The core's claim beside rate-limiter-flexible, then memory and scale. */
export function coreTables(rows: CoreRows): string {
  const compare = renderTable(HEADER, RIGHT, [
    line("core (CapService, Redis)", "3 × 5 / 10 min", rows.equal.core, rows.equal.chained),
    line("rate-limiter-flexible, 3 RateLimiterRedis chained", "3 × 5 / 10 min", rows.equal.chained),
    line("core (CapService, Redis)", "20/day, 10/h, 5/10 min", rows.tiered.core, rows.tiered.chained),
    line("rate-limiter-flexible, 3 RateLimiterRedis chained", "20/day, 10/h, 5/10 min", rows.tiered.chained),
  ]);
  const scale = renderTable(["recipients", "claims each", "claims/s", "bytes per (cap, recipient)"], [true, true, true, true],
    rows.scale.map((s) => [whole.format(s.recipients), String(s.claimsPerRecipient), whole.format(s.perSec), whole.format(s.bytesPerCapRecipient)]));
  return `${compare}\n\nmemory: ${rows.bytesPerCapRecipient.toFixed(1)} bytes per (cap, recipient) holding 5 entries (INFO used_memory delta over 100,000 recipients × 3 caps, keys and expiries included)\n\n${scale}`;
}

/** Redis instructions per claim (callgrind), the claim beside the floor of its three commands. */
export function claimInstructionLines(result: ClaimInstructions): string[] {
  if ("skipped" in result) return [`claim instructions: skipped, ${result.skipped}`];
  const [claim, floor] = result.rows;
  return [
    `claim instructions: Redis's instructions per claim, counted by valgrind's callgrind in a redis-server of the bench's own (a count, not a time: the neighbours on the box do not move it); `
      + `3 caps of 5 per 10 min, batches of 50 over 20,000 recipients, ${claim.claims.toLocaleString("en-US")} claims after 30,000 unmeasured`,
    "",
    renderTable(["script", "instructions per claim", "÷ floor"], [false, true, true], result.rows.map((r) => [r.name, whole.format(r.perClaim), (r.perClaim / floor.perClaim).toFixed(2)])),
  ];
}
