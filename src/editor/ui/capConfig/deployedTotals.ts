import { deployedOrgOf, totalOrgsOf, type DeployedOrg } from "../../model/totalUsage";
import type { Rule } from "../../model/ruleRows";

/**
 * Reads what the deployed cap-config's total caps hold (`GET …/totals`, with
 * the editor's login, as the Admission sidebar reads `…/usage`), once per org
 * the rules name, when its dialog opens. A cap-config that is not deployed (404)
 * or not usable (409) shows nothing, and neither does a rule set without a
 * total cap: nothing is asked then.
 */
export function readDeployedTotals(configId: string, rules: readonly Rule[], show: (orgKey: string, deployed: DeployedOrg) => void): void {
  for (const org of totalOrgsOf(rules)) {
    $.ajax({
      url: `frequency-cap/${encodeURIComponent(configId)}/totals`,
      data: org === "" ? {} : { org },
      dataType: "json",
      cache: false,
    }).done((body: unknown) => {
      const deployed = deployedOrgOf(body);
      if (deployed) show(org, deployed);
    });
  }
}
