import assert from "node:assert/strict";
import type { Node, NodeMessage } from "node-red";
import { gateNodes, helper } from "../support/nodeRed";
import { helperSuite } from "../support/helperSuite";
import { nodeNamed, onlyNode, readExample } from "../support/exampleFlow";

/* eslint-disable @typescript-eslint/no-require-imports */
const coreNodes = [
  require("@node-red/nodes/core/common/20-inject.js"),
  require("@node-red/nodes/core/common/21-debug.js"),
  require("@node-red/nodes/core/common/90-comment.js"),
  require("@node-red/nodes/core/function/10-function.js"),
  require("@node-red/nodes/core/function/15-change.js"),
  require("@node-red/nodes/core/sequence/17-split.js"),
];

interface Summary { campaign: string; total: number; sent: number; skipped: number; errors: number; skipped_by: Record<string, number> }
interface Row { recipient: string; status: string; reason?: string; frequency_cap_id?: string; retry_after_seconds?: number; message_id?: string }
type Report = NodeMessage & { payload: { summary: Summary; recipients: Row[] } };

const contact = (n: number) => `contact-${String(n).padStart(4, "0")}`;

/**
 * examples/campaign-batch.json as shipped, its inject buttons pressed in the
 * order its comments give: two earlier batches, 50 opt-outs, then the whole
 * audience of 5,000, split, gated and joined back into one report.
 */
describe("examples/campaign-batch.json", function () {
  this.timeout(120_000);
  helperSuite();

  it("reports every one of 5,000 contacts: 300 and 20 capped by the marketing cap and the backstop, 50 opted out, 4,630 sent", async () => {
    const flow = readExample("campaign-batch.json");
    await helper.load([...gateNodes, ...coreNodes], flow);
    const reports: Report[] = [];
    // made in a function node's sandbox (another realm's Object): as JSON, as a debug sidebar would show it
    (helper.getNode(nodeNamed(flow, "debug", "campaign report").id) as Node).on("input", (m: NodeMessage) => reports.push(JSON.parse(JSON.stringify(m)) as Report));
    const press = (name: string) => (helper.getNode(nodeNamed(flow, "inject", name).id) as Node).receive({});
    const untilReports = async (count: number) => {
      for (let t = 0; t < 3000 && reports.length < count; t++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(reports.length, count, "reports so far");
    };
    const blocked = async () => {
      const res = await helper.request().get(`/frequency-cap/${onlyNode(flow, "cap-config").id}/suppressions`).query({ count: "5000" });
      return (res.body as { entries: unknown[] }).entries.length;
    };

    press("① promo to contacts 1–300");
    await untilReports(1);
    assert.deepEqual(reports[0]?.payload.summary, { campaign: "morning-promo", total: 300, sent: 300, skipped: 0, errors: 0, skipped_by: {} });

    press("② 3 login codes each to contacts 301–320");
    await untilReports(2);
    assert.deepEqual(reports[1]?.payload.summary, { campaign: "login-codes", total: 60, sent: 60, skipped: 0, errors: 0, skipped_by: {} });

    // control msgs change the block list and send nothing on: wait for the list itself
    press("③ contacts 4951–5000 text STOP");
    for (let t = 0; t < 200 && (await blocked()) < 50; t++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(await blocked(), 50);

    press("④ evening promo to all 5,000");
    await untilReports(3);
    const { summary, recipients } = reports[2].payload;
    assert.deepEqual(summary, {
      campaign: "evening-promo", total: 5000, sent: 4630, skipped: 370, errors: 0,
      skipped_by: { "frequency_capped (marketing-sms-1-a-day)": 300, "frequency_capped (any-sms-3-a-day)": 20, opted_out: 50 },
    });
    // one row per contact, in the audience's order
    assert.deepEqual(recipients.map((r) => r.recipient), Array.from({ length: 5000 }, (_, i) => contact(i + 1)));

    const capped = recipients[0];
    assert.ok(typeof capped.retry_after_seconds === "number" && capped.retry_after_seconds > 86_000 && capped.retry_after_seconds <= 86_400, JSON.stringify(capped));
    assert.deepEqual(capped, { recipient: contact(1), status: "skipped", reason: "frequency_capped", frequency_cap_id: "marketing-sms-1-a-day", retry_after_seconds: capped.retry_after_seconds });
    const backstop = recipients[300];
    assert.deepEqual([backstop.recipient, backstop.status, backstop.reason, backstop.frequency_cap_id], [contact(301), "skipped", "frequency_capped", "any-sms-3-a-day"]);
    assert.deepEqual(recipients[4950], { recipient: contact(4951), status: "skipped", reason: "opted_out" });
    assert.deepEqual(recipients[320], { recipient: contact(321), status: "sent", message_id: "evening-promo/contact-0321" });
    assert.deepEqual(recipients.slice(320, 4950).filter((r) => r.status !== "sent"), [], "everyone between the capped and the opted out is sent");
  });
});
