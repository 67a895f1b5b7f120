/**
 * How the sidebar words times, a recipient's usage and the inspector's
 * refusals. Every text comes from plugins/locales/<lang>/admission-sidebar.json
 * through `t`, keyed under `admission.`.
 */

export type SidebarTranslate = (key: string, params?: Readonly<Record<string, string | number>>) => string;

/** 75 → "1 min 15 s": the largest unit and, when not zero, the next one; null → "never". */
export function formatSeconds(seconds: number | null | undefined, t: SidebarTranslate): string {
  if (seconds === null || seconds === undefined) return t("time.never");
  const units: [string, number, number][] = [["d", 86400, 24], ["h", 3600, 60], ["min", 60, 60], ["s", 1, 1]];
  for (const [i, [name, size, per]] of units.entries()) {
    const next = units[i + 1];
    if (!next) break;
    if (seconds >= size) {
      const [nextName, nextSize] = next;
      const rest = Math.floor(seconds / nextSize) % per;
      return t(`time.${name}`, { n: Math.floor(seconds / size) }) + (rest ? ` ${t(`time.${nextName}`, { n: rest })}` : "");
    }
  }
  return t("time.s", { n: seconds });
}

/** One cap of `GET …/usage` as the admin API answers it. */
interface UsageCap {
  cap_id: string;
  name?: string;
  enforcement?: string;
  scope?: string;
  channel?: string;
  count: number;
  max_count: number;
  remaining: number;
  retry_after_seconds: number | null;
  window_seconds: number;
}

export interface UsageRow {
  id: string;
  name: string;
  shadow: boolean;
  count: number;
  max: number;
  remaining: number;
  full: boolean;
  retry: number | null;
  fraction: number;
  scope: string;
  window: string;
}

/** The usage API's caps as bars: how full each is, what is left, when it frees. */
export function usageRows(body: unknown, t: SidebarTranslate): UsageRow[] {
  const caps = (body as { caps?: UsageCap[] } | null | undefined)?.caps ?? [];
  return caps.map((cap) => ({
    id: cap.cap_id,
    name: cap.name ?? "",
    shadow: cap.enforcement === "shadow",
    count: cap.count,
    max: cap.max_count,
    remaining: cap.remaining,
    full: cap.remaining <= 0,
    retry: cap.retry_after_seconds,
    fraction: cap.max_count > 0 ? Math.min(1, cap.count / cap.max_count) : 1,
    scope: cap.scope === "global" ? t("usage.everyChannel") : String(cap.channel ?? ""),
    window: formatSeconds(cap.window_seconds, t),
  }));
}

/** What to tell the user when the usage API refuses. */
export function refusal(status: number, body: unknown, t: SidebarTranslate): string {
  const error = (body as { error?: unknown } | null | undefined)?.error;
  const said = typeof error === "string" ? error : "";
  if (status === 401 || status === 403) return t("refusal.permission");
  if (status === 404) return t("refusal.notDeployed");
  if (status === 400) return t("refusal.badInput", { error: said });
  if (status === 503) return t("refusal.store", { error: said });
  if (status === 0) return t("refusal.noAnswer");
  return t("refusal.other", { status, error: said }).trim();
}
