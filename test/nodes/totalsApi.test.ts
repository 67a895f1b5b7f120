import assert from "node:assert/strict";
import { deployGateFlow, sendInOrder } from "../support/gateFlow";
import { helper } from "../support/nodeRed";
import { sleep } from "../support/redis";
import { applicableCaps } from "../../src/core/caps/applicableCaps";
import { withDefaults } from "../../src/core/rules/rules";
import type { Send } from "../../src/core/send";
import type { CapConfigNode } from "../../src/nodes/gate/capConfigNode";

const TOTAL_OF_5 = { id: "launch", scope: "global", counts: "total", max_count: 5, window_seconds: 86400 } as const;
const AD_TOTAL = { id: "ad-total", scope: "channel", channel: "push", counts: "total", per: ["ad_id"], max_count: 100, window_seconds: 1, window_type: "lifetime" };
const OTHER_ORG = { id: "other-org", org: "globex", scope: "global", counts: "total", max_count: 7, window_seconds: 60 };
const SWITCHED_OFF = { id: "off", scope: "global", counts: "total", max_count: 9, window_seconds: 60, enabled: false };
const ONE_EACH = { id: "one-each", scope: "global", max_count: 1, window_seconds: 600 };

interface TotalsBody {
  org: string;
  caps: { cap_id: string; counts: string; max_count: number; count: number | null; remaining: number | null; leased: number | null; leases: number | null; window_type: string; needs?: string[]; note?: string }[];
}

interface UsageBody {
  caps: { cap_id: string; counts: string; count: number; remaining: number; leased?: number; leases?: number }[];
}

function sends(prefix: string, count: number, extra: Record<string, unknown> = {}): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({ recipient: `${prefix}${i}`, channel: "sms", messageId: `${prefix}${i}`, ...extra }));
}

async function totals(query: Record<string, string> = {}): Promise<TotalsBody> {
  const res = await helper.request().get("/frequency-cap/cfg0/totals").query(query);
  assert.equal(res.status, 200, res.text);
  return res.body as TotalsBody;
}

describe("admin API: total caps' usage (GET …/totals, GET …/usage)", function () {
  this.timeout(60_000);
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());

  it("GET …/totals: 3 sends through the gate into a total of 5 → count 3, remaining + leased 2; a slot on lease shows as leased until it goes back", async () => {
    const flow = await deployGateFlow({ store: "memory", rules: [TOTAL_OF_5, ONE_EACH] });
    await sendInOrder(flow, sends("u", 3));
    assert.equal(flow.out.of("allowed").length, 3);
    const body = await totals();
    assert.equal(body.org, "default");
    assert.deepEqual(body.caps.map((c) => c.cap_id), ["launch"], "only total caps are listed");
    const [cap] = body.caps;
    assert.equal(cap?.counts, "total");
    assert.equal(cap?.max_count, 5);
    assert.equal(cap?.window_type, "rolling");
    assert.equal(cap?.count, 3);
    assert.equal((cap?.remaining ?? 0) + (cap?.leased ?? 0), 2);

    // a gate in the middle of a send holds a slot of this cap-config's lease: not counted, not free for others
    const service = (helper.getNode("cfg0") as CapConfigNode).service;
    assert.ok(service);
    const send: Send = { recipient: "x", channel: "sms", messageId: "x", org: "default", attributes: {}, recipientLimits: {} };
    const [launch] = applicableCaps([withDefaults(TOTAL_OF_5)], send, "fc", "");
    assert.ok(launch?.quota);
    const reserved = service.engine.totals.reserve(launch.key, launch.quota);
    assert.equal(reserved === true ? true : await reserved, true);
    const held = (await totals()).caps[0];
    assert.deepEqual([held?.count, held?.leases], [3, 1]);
    assert.ok((held?.leased ?? 0) >= 1, `leased ${held?.leased}`);
    assert.equal((held?.remaining ?? 0) + (held?.leased ?? 0), 2);

    // not used: back into the lease, and after a second without sends back to the pool
    service.engine.totals.cancel(launch.key);
    let now = held;
    for (let i = 0; i < 50 && now?.leased !== 0; i++) {
      await sleep(100);
      now = (await totals()).caps[0];
    }
    assert.deepEqual([now?.count, now?.remaining, now?.leased, now?.leases], [3, 2, 0, 0]);
  });

  it("GET …/usage reports a total cap's count, remaining and leased beside the recipient's own caps", async () => {
    const flow = await deployGateFlow({ store: "memory", rules: [TOTAL_OF_5, ONE_EACH] });
    await sendInOrder(flow, sends("u", 4));
    const res = await helper.request().get("/frequency-cap/cfg0/usage").query({ recipient: "u1", channel: "sms" });
    assert.equal(res.status, 200, res.text);
    const caps = (res.body as UsageBody).caps;
    assert.deepEqual(caps.map((c) => [c.cap_id, c.counts]), [["launch", "total"], ["one-each", "per_recipient"]]);
    const total = caps[0];
    assert.equal(total?.count, 4);
    assert.equal(typeof total?.leased, "number");
    assert.equal((total?.remaining ?? 0) + (total?.leased ?? 0), 1);
    assert.equal(caps[1]?.count, 1, "the recipient's own cap counts its one send");
    assert.equal(caps[1]?.leased, undefined, "a per-recipient cap has no leases");
  });

  it("lists every total cap of the org once, with per values asked for, and says which are needed", async () => {
    const flow = await deployGateFlow({ store: "memory", rules: [TOTAL_OF_5, AD_TOTAL, OTHER_ORG, SWITCHED_OFF] });
    await sendInOrder(flow, [
      { recipient: "a", channel: "push", messageId: "p1", attributes: { ad_id: "ad-1" } },
      { recipient: "b", channel: "push", messageId: "p2", attributes: { ad_id: "ad-1" } },
      { recipient: "c", channel: "push", messageId: "p3", attributes: { ad_id: "ad-2" } },
    ]);
    const unsplit = await totals();
    assert.deepEqual(unsplit.caps.map((c) => [c.cap_id, c.count]), [["launch", 3], ["ad-total", null]]);
    const ad = unsplit.caps[1];
    assert.deepEqual(ad?.needs, ["ad_id"]);
    assert.match(ad?.note ?? "", /ad_id/);
    assert.equal(ad?.window_type, "lifetime");
    const first = await totals({ attributes: JSON.stringify({ ad_id: "ad-1" }) });
    assert.deepEqual(first.caps.map((c) => [c.cap_id, c.count]), [["launch", 3], ["ad-total", 2]]);
    assert.equal(first.caps[1]?.needs, undefined);
    const second = await totals({ attributes: JSON.stringify({ ad_id: "ad-2" }) });
    assert.equal(second.caps[1]?.count, 1);
    // a rule without org applies to every org, with a counter per org: nothing was sent in globex
    const globex = await totals({ org: "globex" });
    assert.equal(globex.org, "globex");
    assert.deepEqual(globex.caps.map((c) => [c.cap_id, c.count]), [["launch", 0], ["ad-total", null], ["other-org", 0]]);
  });

  it("answers 400 for attributes that are not a JSON object of texts, and 404 for a cap-config that is not deployed", async () => {
    await deployGateFlow({ store: "memory", rules: [TOTAL_OF_5] });
    for (const attributes of ["{", "[1]", JSON.stringify({ ad_id: { nested: true } })]) {
      const res = await helper.request().get("/frequency-cap/cfg0/totals").query({ attributes });
      assert.equal(res.status, 400, `${attributes}: ${res.text}`);
    }
    assert.equal((await helper.request().get("/frequency-cap/cfg0/totals").query({ attributes: '{"constructor":"x","__proto__":"y"}' })).status, 200, "attribute names are data");
    assert.equal((await helper.request().get("/frequency-cap/nope/totals")).status, 404);
  });
});
