import type { Translate } from "../../core/schema/messages";
import { isPlainObject } from "./lists";
import type { Rule, RowValues } from "./ruleRows";

/**
 * What a deployed cap-config's total caps hold (`GET …/totals`), for the rules
 * table: each total cap's row shows its count, what is left and what is out
 * on lease. Read once when the dialog opens; keyed by the org a row names ("":
 * a row without org, read in the deployed cap-config's default org).
 */
export interface DeployedTotal {
  count: number | null;
  remaining: number | null;
  leased: number | null;
  leases: number | null;
  /** per attributes whose values a count needs (the cap has one counter per value) */
  needs: string[];
}

export interface DeployedOrg {
  /** the org the counters were read in */
  org: string;
  caps: Map<string, DeployedTotal>;
}

/** The orgs to read for these rules ("" for the default org), or none when no rule counts a total. */
export function totalOrgsOf(rules: readonly Rule[]): string[] {
  const orgs = new Set<string>();
  for (const rule of rules) {
    if (rule.counts !== "total") continue;
    orgs.add(typeof rule.org === "string" ? rule.org.trim() : "");
  }
  return [...orgs];
}

function count(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** A `GET …/totals` answer, read defensively; null when it is not one. */
export function deployedOrgOf(body: unknown): DeployedOrg | null {
  if (!isPlainObject(body) || typeof body.org !== "string" || !Array.isArray(body.caps)) return null;
  const caps = new Map<string, DeployedTotal>();
  for (const cap of body.caps as unknown[]) {
    if (!isPlainObject(cap) || typeof cap.cap_id !== "string") continue;
    const needs = Array.isArray(cap.needs) ? (cap.needs as unknown[]).filter((n): n is string => typeof n === "string") : [];
    caps.set(cap.cap_id, { count: count(cap.count), remaining: count(cap.remaining), leased: count(cap.leased), leases: count(cap.leases), needs });
  }
  return { org: body.org, caps };
}

/** What a row shows under its inputs: only a row that counts a total and whose id the deployed cap-config has as a total cap. */
export function rowUsageOf(deployed: ReadonlyMap<string, DeployedOrg>, row: Pick<RowValues, "id" | "org" | "counts">, t: Translate): { text: string; title: string } | null {
  if (row.counts !== "total") return null;
  const read = deployed.get(row.org.trim());
  const total = read?.caps.get(row.id.trim());
  if (!read || !total) return null;
  const title = t("cap-config.row.totalUsageTitle", { org: read.org });
  if (total.count === null || total.remaining === null || total.leased === null || total.leases === null) {
    return total.needs.length > 0 ? { text: t("cap-config.row.totalPer", { per: total.needs.join(", ") }), title } : null;
  }
  const lease = total.leases === 0 && total.leased === 0 ? t("cap-config.row.leaseNone")
    : total.leases === 1 ? t("cap-config.row.leaseOne", { leased: total.leased })
      : t("cap-config.row.leaseMany", { leased: total.leased, leases: total.leases });
  return { text: t("cap-config.row.totalUsage", { counted: total.count, remaining: total.remaining, lease }), title };
}
