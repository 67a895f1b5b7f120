import { formatSeconds, type SidebarTranslate } from "./words";

/**
 * The inspector's account of one recipient beside its caps: the last
 * verdicts of the cap-config's gates (`GET …/history`) and the msgs held for
 * it (`GET …/held?recipient=`), as lines to show.
 */

interface HistoryEntryBody {
  at?: string;
  gate?: string;
  gate_name?: string;
  outcome?: string;
  reason?: string;
  cap_ids?: string[];
  retry_after_seconds?: number | null;
}

interface HeldRowBody {
  gate?: string;
  due_at?: string;
  reason?: string | null;
  deferrals?: number;
}

export interface RecipientLine {
  /** the gate's node id: its name is the editor's */
  gate: string;
  /** the instant the line is about, ms */
  at: number;
  outcome: string;
  text: string;
}

const OUTCOMES = new Set(["allowed", "skipped", "deferred", "recorded", "released"]);

/** `GET …/history`'s entries, newest first, each `reason (caps) · retry in …`. */
export function historyLines(body: unknown, t: SidebarTranslate): RecipientLine[] {
  const entries = (body as { entries?: HistoryEntryBody[] } | null | undefined)?.entries ?? [];
  return entries.map((e) => {
    const outcome = OUTCOMES.has(String(e.outcome)) ? String(e.outcome) : "allowed";
    const parts = [t(`outcome.${outcome}`)];
    if (e.reason) parts.push(e.cap_ids && e.cap_ids.length > 0 ? `${e.reason} (${e.cap_ids.join(", ")})` : e.reason);
    else if (e.cap_ids && e.cap_ids.length > 0) parts.push(e.cap_ids.join(", "));
    if (typeof e.retry_after_seconds === "number") parts.push(t("history.retry", { wait: formatSeconds(e.retry_after_seconds, t) }));
    return { gate: String(e.gate ?? ""), at: Date.parse(String(e.at)), outcome, text: parts.join(" · ") };
  });
}

/** Whether the history API said the cap-config keeps none. */
export function historyOff(body: unknown): boolean {
  return (body as { enabled?: unknown } | null | undefined)?.enabled === false;
}

/** `GET …/held?recipient=`'s msgs, soonest first, each `reason · due in …`. */
export function heldLines(body: unknown, now: number, t: SidebarTranslate): RecipientLine[] {
  const held = (body as { held?: HeldRowBody[] } | null | undefined)?.held ?? [];
  return held
    .map((h) => {
      const due = Date.parse(String(h.due_at));
      const parts = [h.reason ?? t("outcome.deferred"), t("heldList.due", { wait: formatSeconds(Math.max(0, Math.ceil((due - now) / 1000)), t) })];
      if (typeof h.deferrals === "number" && h.deferrals > 1) parts.push(t("heldList.deferrals", { count: h.deferrals }));
      return { gate: String(h.gate ?? ""), at: due, outcome: "deferred", text: parts.join(" · ") };
    })
    .sort((a, b) => a.at - b.at);
}
