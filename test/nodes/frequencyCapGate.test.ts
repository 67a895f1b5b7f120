import assert from "node:assert/strict";
import type { NodeStatus } from "node-red";
import { helper } from "../support/nodeRed";
import { deployGateFlow, sendInOrder } from "../support/gateFlow";
import { uniquePrefix } from "../support/redis";
import { STORE_KINDS, SuiteStore } from "../support/suiteStore";

const DAY = 86400;

for (const kind of STORE_KINDS) {
  describe(`frequency-cap-gate (${kind} store)`, function () {
    const store = new SuiteStore(kind);
    store.hooks();
    const prefixes: string[] = [];
    /** a fresh key prefix each call (a redeploy within a test starts empty), dropped after the test */
    const config = () => {
      const keyPrefix = uniquePrefix(kind);
      prefixes.push(keyPrefix);
      return { keyPrefix, timeoutMs: 2000 };
    };
    before(() => helper.startServer());
    after(() => helper.stopServer());
    afterEach(async () => {
      await helper.unload();
      for (const p of prefixes.splice(0)) await store.drop(p);
    });

    it("lets three OTPs through without filling the marketing-only cap (the OTP story)", async () => {
      const flow = await deployGateFlow({
        store, config: config(), rules: [
          { id: "mkt-daily", scope: "channel", channel: "sms", max_count: 3, window_seconds: DAY, applies_to_categories: ["marketing"] },
          { id: "backstop", scope: "channel", channel: "sms", max_count: 10, window_seconds: DAY },
        ],
      });
      const base = { recipient: "+15550100", channel: "sms" };
      await sendInOrder(flow, [1, 2, 3].map((i) => ({ ...base, category: "otp", messageId: `otp-${i}` })));
      await sendInOrder(flow, [1, 2, 3, 4].map((i) => ({ ...base, category: "marketing", messageId: `mkt-${i}` })));
      assert.equal(flow.out.of("allowed").length, 6);
      const [capped] = flow.out.of("skipped");
      assert.equal(capped?.messageId, "mkt-4");
      const admission = capped?.admission as Record<string, unknown>;
      assert.equal(admission.reason, "frequency_capped");
      assert.equal(admission.cap_id, "mkt-daily");
      assert.equal(admission.frequency_cap_id, "mkt-daily");
      assert.equal(admission.max_count, 3);
      assert.equal(admission.window_seconds, DAY);
      assert.equal(admission.channel, "sms");
      const retry = admission.retry_after_seconds as number;
      assert.ok(retry > DAY - 60 && retry <= DAY, `retry ${retry}`);
      assert.equal((admission.error as { code: string }).code, "FREQUENCY_CAP_EXCEEDED");
      assert.deepEqual((admission.error as { details: unknown }).details, {
        cap_id: "mkt-daily", retry_after_seconds: retry, channel: "sms", window_seconds: DAY, max_count: 3,
      });
    });

    it("closes the partial-claim leak: a send refused by the strict cap takes nothing of the loose one", async () => {
      const flow = await deployGateFlow({
        store, config: config(), rules: [
          { id: "strict", scope: "channel", channel: "sms", max_count: 1, window_seconds: DAY, applies_to_categories: ["marketing"] },
          { id: "loose", scope: "channel", channel: "sms", max_count: 3, window_seconds: DAY },
        ],
      });
      const base = { recipient: "r", channel: "sms" };
      await sendInOrder(flow, [
        { ...base, category: "marketing", messageId: "m1" },
        { ...base, category: "marketing", messageId: "m2" },
        { ...base, category: "marketing", messageId: "m3" },
        { ...base, messageId: "t1" },
        { ...base, messageId: "t2" },
        { ...base, messageId: "t3" },
      ]);
      // loose holds m1, t1, t2 = 3: only t3 is over it; m2 and m3 took nothing
      assert.deepEqual(flow.out.of("allowed").map((m) => m.messageId), ["m1", "t1", "t2"]);
      assert.deepEqual(flow.out.of("skipped").map((m) => [m.messageId, (m.admission as { cap_id: string }).cap_id]),
        [["m2", "strict"], ["m3", "strict"], ["t3", "loose"]]);
    });

    it("denies across channels with a global cap", async () => {
      const flow = await deployGateFlow({
        store, config: config(), rules: [{ id: "all-channels", scope: "global", max_count: 2, window_seconds: DAY }],
      });
      await sendInOrder(flow, ["sms", "email", "push"].map((channel, i) => ({ recipient: "r", channel, messageId: `g${i}` })));
      assert.deepEqual(flow.out.of("allowed").map((m) => m.channel), ["sms", "email"]);
      const [refused] = flow.out.of("skipped");
      assert.equal(refused?.channel, "push");
      assert.equal((refused?.admission as { cap_id: string }).cap_id, "all-channels");
    });

    it("never takes a second slot for a retried messageId (or _msgid)", async () => {
      const flow = await deployGateFlow({
        store, config: config(), rules: [{ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: DAY }],
      });
      await sendInOrder(flow, [
        { recipient: "r", channel: "sms", messageId: "same" },
        { recipient: "r", channel: "sms", messageId: "same" },
        { recipient: "r", channel: "sms", messageId: "same" },
        { recipient: "r", channel: "sms", messageId: "different" },
      ]);
      assert.deepEqual(flow.out.of("allowed").map((m) => m.messageId), ["same", "same", "same"]);
      assert.deepEqual(flow.out.of("skipped").map((m) => m.messageId), ["different"]);

      await helper.unload();
      const second = await deployGateFlow({
        store, config: config(), rules: [{ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: DAY }],
      });
      await sendInOrder(second, [
        { _msgid: "node-red-id", recipient: "r", channel: "sms" },
        { _msgid: "node-red-id", recipient: "r", channel: "sms" },
        { _msgid: "another", recipient: "r", channel: "sms" },
      ]);
      assert.equal(second.out.of("allowed").length, 2);
      assert.equal(second.out.of("skipped").length, 1);
    });

    it("lets exempt tiers through unchecked and unrecorded", async () => {
      const flow = await deployGateFlow({
        store, config: { ...config(), exemptTiers: ["P0", "security"] },
        rules: [{ id: "two", scope: "global", max_count: 2, window_seconds: DAY }],
      });
      const base = { recipient: "r", channel: "sms" };
      await sendInOrder(flow, [
        { ...base, tier: "P0", messageId: "p0-1" },
        { ...base, tier: "security", messageId: "sec-1" },
        { ...base, tier: "P2", messageId: "n1" },
        { ...base, messageId: "n2" },
        { ...base, tier: "P0", messageId: "p0-2" },
        { ...base, tier: "P1", messageId: "n3" },
      ]);
      assert.deepEqual(flow.out.of("allowed").map((m) => m.messageId), ["p0-1", "sec-1", "n1", "n2", "p0-2"]);
      const exempt = flow.out.of("allowed").filter((m) => (m.admission as { reason?: string }).reason === "exempt");
      assert.deepEqual(exempt.map((m) => m.messageId), ["p0-1", "sec-1", "p0-2"]);
      assert.equal(exempt.every((m) => (m.admission as { claims: unknown[] }).claims.length === 0), true);
      assert.deepEqual(flow.out.of("skipped").map((m) => m.messageId), ["n3"]);
    });

    it("lets recipientLimits lower a cap and never raise it", async () => {
      const flow = await deployGateFlow({
        store, config: config(), rules: [{ id: "five", scope: "channel", channel: "sms", max_count: 5, window_seconds: DAY }],
      });
      const lowered = { recipient: "quiet-one", channel: "sms", recipientLimits: { five: 2 } };
      const raised = { recipient: "greedy-one", channel: "sms", recipientLimits: { five: 50 } };
      await sendInOrder(flow, [1, 2, 3].map((i) => ({ ...lowered, messageId: `l${i}` })));
      await sendInOrder(flow, [1, 2, 3, 4, 5, 6].map((i) => ({ ...raised, messageId: `r${i}` })));
      const skipped = flow.out.of("skipped");
      assert.deepEqual(skipped.map((m) => m.messageId), ["l3", "r6"]);
      assert.equal((skipped[0]?.admission as { max_count: number }).max_count, 2);
      assert.equal((skipped[1]?.admission as { max_count: number }).max_count, 5);
    });

    it("waits for every blocking cap: retry_after is the longest, named by cap_id", async () => {
      const flow = await deployGateFlow({
        store, config: config(), rules: [
          { id: "short", scope: "channel", channel: "sms", max_count: 1, window_seconds: 60 },
          { id: "long", scope: "global", max_count: 1, window_seconds: 600 },
          { id: "roomy", scope: "global", max_count: 9, window_seconds: 900 },
        ],
      });
      await sendInOrder(flow, [
        { recipient: "r", channel: "sms", messageId: "1" },
        { recipient: "r", channel: "sms", messageId: "2" },
      ]);
      const admission = flow.out.of("skipped")[0]?.admission as Record<string, unknown>;
      assert.equal(admission.cap_id, "long");
      assert.deepEqual(admission.blocking_cap_ids, ["long", "short"]);
      const retry = admission.retry_after_seconds as number;
      assert.ok(retry > 590 && retry <= 600, `retry ${retry}`);
    });

    it("keeps org 'a:b' + recipient 'c' apart from org 'a' + recipient 'b:c'", async () => {
      const flow = await deployGateFlow({
        store, config: config(), rules: [{ id: "one", scope: "global", max_count: 1, window_seconds: DAY }],
      });
      await sendInOrder(flow, [
        { org: "a:b", recipient: "c", channel: "sms", messageId: "x1" },
        { org: "a", recipient: "b:c", channel: "sms", messageId: "x2" },
        { org: "a|b", recipient: "c", channel: "sms", messageId: "x3" },
        { org: "a", recipient: "b|c", channel: "sms", messageId: "x4" },
      ]);
      assert.equal(flow.out.of("allowed").length, 4);
    });

    it("records its claim on msg.admission and keeps what earlier gates wrote", async () => {
      const flow = await deployGateFlow({
        store, config: config(), rules: [{ id: "c1", scope: "global", max_count: 5, window_seconds: 60 }],
      });
      const earlier = { status: "allowed", gate: "suppression-gate", claims: [{ gate: "suppression-gate", kind: "dup" }],
        trail: [{ gate: "suppression-gate", status: "allowed", at: "2026-11-30T00:00:00.000Z" }] };
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "m1", admission: earlier }]);
      const admission = flow.out.of("allowed")[0]?.admission as Record<string, unknown> & { claims: Record<string, unknown>[]; trail: Record<string, unknown>[] };
      assert.equal(admission.status, "allowed");
      assert.equal(admission.gate, "frequency-cap-gate");
      assert.equal(admission.remaining, 4);
      assert.equal(admission.claims.length, 2);
      assert.equal(admission.claims[0]?.gate, "suppression-gate");
      assert.deepEqual(admission.claims[1]?.cap_ids, ["c1"]);
      assert.equal(admission.claims[1]?.member, "m1");
      assert.deepEqual(admission.trail.map((t) => t.gate), ["suppression-gate", "frequency-cap-gate"]);
    });

    it("answers in HTTP mode with 429, Retry-After and the error body", async () => {
      const flow = await deployGateFlow({
        store, config: config(), gate: { httpResponse: true },
        rules: [{ id: "one", scope: "channel", channel: "sms", max_count: 1, window_seconds: 120 }],
      });
      await sendInOrder(flow, [
        { recipient: "r", channel: "sms", messageId: "a", payload: "hello" },
        { recipient: "r", channel: "sms", messageId: "b", payload: "hello", headers: { "x-trace": "t1" } },
      ]);
      assert.equal(flow.out.of("allowed")[0]?.payload, "hello");
      assert.equal(flow.out.of("allowed")[0]?.statusCode, undefined);
      const refused = flow.out.of("skipped")[0];
      assert.equal(refused.statusCode, 429);
      const headers = refused.headers as Record<string, string>;
      assert.ok(Number(headers["Retry-After"]) > 100 && Number(headers["Retry-After"]) <= 120);
      assert.equal(headers["x-trace"], "t1");
      const payload = refused.payload as { error: string; details: { cap_id: string } };
      assert.equal(payload.error, "FREQUENCY_CAP_EXCEEDED");
      assert.equal(payload.details.cap_id, "one");
    });

    it("sends bad input to Catch, intact, with an error naming the field", async () => {
      const flow = await deployGateFlow({
        store, config: { ...config(), requireTier: true },
        rules: [{ id: "one", scope: "global", max_count: 1, window_seconds: 60 }],
      });
      await sendInOrder(flow, [
        { channel: "sms", tier: "P1", messageId: "no-recipient" },
        { recipient: "r", channel: "carrier-pigeon", tier: "P1", messageId: "bad-channel" },
        { recipient: "r", channel: "sms", messageId: "no-tier" },
        { recipient: "r", channel: "sms", tier: "P1", messageId: "bad-attr", attributes: { topic: ["x"] } },
      ]);
      const caught = flow.out.of("caught");
      assert.deepEqual(caught.map((m) => m.messageId), ["no-recipient", "bad-channel", "no-tier", "bad-attr"]);
      const messages = caught.map((m) => (m.error as { message: string }).message);
      assert.match(messages[0] ?? "", /^recipient: is required/);
      assert.match(messages[1] ?? "", /^channel: unknown channel "carrier-pigeon"/);
      assert.match(messages[2] ?? "", /^tier: is required/);
      assert.match(messages[3] ?? "", /^attributes\.topic: must be a string/);
      assert.ok(caught.every((m) => m.admission === undefined), "the msg reaches Catch as it came in");
      assert.equal(flow.out.of("allowed").length + flow.out.of("skipped").length, 0);
    });

    it("sends every msg to Catch when its cap-config rules are invalid, naming the rule", async () => {
      const flow = await deployGateFlow({
        store, config: config(), rules: [{ id: "bad", scope: "global", channel: "sms", max_count: 1, window_seconds: 60 }],
      });
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "m" }]);
      const message = (flow.out.of("caught")[0]?.error as { message: string }).message;
      assert.match(message, /rule 1 \("bad"\) channel: a global cap must not name a channel/);
    });

    it("refuses a mode this version does not have, and keeps saying so in its status", async () => {
      const flow = await deployGateFlow({ store, config: config(), gate: { mode: "estimate" }, rules: [] });
      const shown: NodeStatus[] = [];
      const original = flow.gate.status.bind(flow.gate);
      flow.gate.status = (s: string | NodeStatus) => { if (typeof s !== "string") shown.push(s); original(s); };
      await sendInOrder(flow, [{ recipient: "r", channel: "sms", messageId: "1" }]);
      assert.match(String((flow.out.of("caught")[0]?.error as { message: string }).message), /mode: "estimate" is not available/);
      await new Promise((r) => setTimeout(r, 400));
      assert.ok(shown.every((s) => s.fill === "red"), JSON.stringify(shown));
    });

    it("claims for 60 recipients at once and reports each one's usage through the admin API (on a cluster: every master)", async () => {
      const flow = await deployGateFlow({
        store, config: config(), rules: [
          { id: "sms-3", scope: "channel", channel: "sms", max_count: 3, window_seconds: DAY },
          { id: "all-5", scope: "global", max_count: 5, window_seconds: DAY },
        ],
      });
      const recipients = Array.from({ length: 60 }, (_, i) => `u${i}`);
      // recipient u{i} gets (i % 5) sms at once, all concurrent
      const msgs = recipients.flatMap((r, i) => Array.from({ length: i % 5 }, (_, n) => ({ recipient: r, channel: "sms", messageId: `${r}-${n}` })));
      for (const m of msgs) flow.send(m);
      await flow.out.until(msgs.length, 15_000);
      assert.equal(flow.out.of("caught").length, 0, "no store error (CROSSSLOT or other)");
      for (const [i, r] of recipients.entries()) {
        const res = await helper.request().get("/frequency-cap/cfg0/usage").query({ recipient: r, channel: "sms" });
        assert.equal(res.status, 200, res.text);
        const caps = new Map((res.body as { caps: { cap_id: string; count: number; remaining: number }[] }).caps.map((c) => [c.cap_id, c]));
        const taken = Math.min(i % 5, 3);
        assert.deepEqual([caps.get("sms-3")?.count, caps.get("sms-3")?.remaining, caps.get("all-5")?.count], [taken, 3 - taken, taken], r);
      }
    });

    it("shows what it counted in its status", async () => {
      const flow = await deployGateFlow({
        store, config: config(), rules: [{ id: "one", scope: "global", max_count: 1, window_seconds: 60 }],
      });
      const shown: NodeStatus[] = [];
      const original = flow.gate.status.bind(flow.gate);
      flow.gate.status = (s: string | NodeStatus) => { if (typeof s !== "string") shown.push(s); original(s); };
      await sendInOrder(flow, [
        { recipient: "r", channel: "sms", messageId: "1" },
        { recipient: "r", channel: "sms", messageId: "2" },
        { recipient: "r", channel: "sms", messageId: "3" },
      ]);
      await new Promise((r) => setTimeout(r, 400));
      const last = shown[shown.length - 1];
      assert.equal(last?.text, "✓ 1 · ✗ 2");
      assert.equal(last?.fill, "green");
    });
  });
}
