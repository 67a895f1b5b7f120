import type { CampaignRow } from "../burst/measureCampaigns";
import { ms, renderTable, whole } from "./markdown";

const HEADER = ["campaign", "store", "msgs", "drain ms", "msgs/s", "raw EVALSHA/s (before, after)", "÷ raw", "B per waiting msg", "peak heap MB", "heap before MB", "allowed", "skipped", "fail_open", "overloaded", "errors"];
const RIGHT = [false, false, true, true, true, true, true, true, true, true, true, true, true, true, true];

function cells(row: CampaignRow): string[] {
  const v = row.verdicts;
  const raw = row.rawBeforePerSec !== undefined && row.rawAfterPerSec !== undefined ? (row.rawBeforePerSec + row.rawAfterPerSec) / 2 : undefined;
  return [
    `campaign-${row.store}-${row.msgs / 1_000_000}M`,
    row.store,
    whole.format(row.msgs),
    ms(row.drainMs),
    whole.format(row.msgsPerSec),
    raw === undefined ? "—" : `${whole.format(raw)} (${whole.format(row.rawBeforePerSec as number)}, ${whole.format(row.rawAfterPerSec as number)})`,
    raw === undefined ? "—" : (row.msgsPerSec / raw).toFixed(2),
    whole.format(row.waitingBytesPerMsg),
    whole.format(row.peakHeapMb),
    whole.format(row.baseHeapMb),
    whole.format(v.allowed),
    whole.format(v.skipped),
    whole.format(v.failOpen),
    whole.format(v.overloaded),
    whole.format(v.errors),
  ];
}

export function campaignTable(rows: readonly CampaignRow[]): string {
  return renderTable(HEADER, RIGHT, rows.map(cells));
}
