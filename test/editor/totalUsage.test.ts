import assert from "node:assert/strict";
import { englishMessages } from "../../src/core/schema/catalog";
import { displayOf, type Rule } from "../../src/editor/model/ruleRows";
import { deployedOrgOf, rowUsageOf, totalOrgsOf, type DeployedOrg } from "../../src/editor/model/totalUsage";

const t = englishMessages();

/** A `GET …/totals` answer as the runtime gives it. */
function answer(org: string, caps: Record<string, unknown>[]): DeployedOrg {
  const read = deployedOrgOf({ org, caps: caps.map((c) => ({ counts: "total", max_count: 1000, window_type: "rolling", ...c })) });
  assert.ok(read);
  return read;
}

const BUDGET: Rule = { id: "budget", scope: "global", counts: "total", max_count: 1000, window_seconds: 86400 };

describe("editor/model: a total cap's usage in its row", () => {
  it("asks only when a rule counts a total: once for the default org, once per org a total rule names", () => {
    assert.deepEqual(totalOrgsOf([{ id: "a", scope: "global", max_count: 1, window_seconds: 60 }]), []);
    assert.deepEqual(totalOrgsOf([BUDGET, { ...BUDGET, id: "b" }, { ...BUDGET, id: "c", org: "acme" }, { ...BUDGET, id: "d", counts: "per_recipient", org: "x" }]), ["", "acme"]);
  });

  it("shows count, what is left and what is out on lease, worded by how many leases", () => {
    const deployed = new Map([["", answer("default", [{ cap_id: "budget", count: 412, remaining: 88, leased: 500, leases: 2 }])]]);
    const row = displayOf(BUDGET);
    assert.deepEqual(rowUsageOf(deployed, row, t), {
      text: "412 counted · 88 left · 500 on 2 leases",
      title: "As deployed, in org default, when this dialog opened: sends counted, slots free for anyone, and slots that Node-RED instances hold on lease (each spends only its own; unused ones go back after a second without sends).",
    });
    const one = new Map([["", answer("default", [{ cap_id: "budget", count: 3, remaining: 0, leased: 2, leases: 1 }])]]);
    assert.equal(rowUsageOf(one, row, t)?.text, "3 counted · 0 left · 2 on 1 lease");
    const none = new Map([["", answer("default", [{ cap_id: "budget", count: 0, remaining: 1000, leased: 0, leases: 0 }])]]);
    assert.equal(rowUsageOf(none, row, t)?.text, "0 counted · 1000 left · none on lease");
  });

  it("shows nothing for a per-recipient row, a cap the deployed config does not have, or before anything was read", () => {
    const deployed = new Map([["", answer("default", [{ cap_id: "budget", count: 1, remaining: 1, leased: 0, leases: 0 }])]]);
    assert.equal(rowUsageOf(deployed, { ...displayOf(BUDGET), counts: "per_recipient" }, t), null);
    assert.equal(rowUsageOf(deployed, { ...displayOf(BUDGET), id: "renamed" }, t), null);
    assert.equal(rowUsageOf(new Map(), displayOf(BUDGET), t), null);
    // a row of another org reads that org's answer, not the default one
    assert.equal(rowUsageOf(deployed, displayOf({ ...BUDGET, org: "acme" }), t), null);
    const acme = new Map([["acme", answer("acme", [{ cap_id: "budget", count: 7, remaining: 993, leased: 0, leases: 0 }])]]);
    assert.equal(rowUsageOf(acme, displayOf({ ...BUDGET, org: "acme" }), t)?.text, "7 counted · 993 left · none on lease");
  });

  it("says a cap split by per has one count per value", () => {
    const deployed = new Map([["", answer("default", [{ cap_id: "ads", count: null, remaining: null, leased: null, leases: null, needs: ["ad_id"] }])]]);
    assert.equal(rowUsageOf(deployed, displayOf({ ...BUDGET, id: "ads", per: ["ad_id"] }), t)?.text, "deployed: one count per value of ad_id; GET …/totals?attributes= reads one");
  });

  it("reads an answer defensively: cap ids are data (a Map), odd entries are skipped", () => {
    const read = deployedOrgOf({ org: "o", caps: [{ cap_id: "__proto__", count: 1, remaining: 2, leased: 3, leases: 1 }, { cap_id: 5 }, "x", { cap_id: "constructor", count: "many" }] });
    assert.deepEqual([...(read?.caps.keys() ?? [])], ["__proto__", "constructor"]);
    assert.equal(read?.caps.get("constructor")?.count, null);
    assert.equal(deployedOrgOf({ error: "no deployed cap-config" }), null);
    assert.equal(deployedOrgOf([]), null);
  });
});
