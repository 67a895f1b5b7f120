import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { arrange, type GateView, type TabInfo } from "../../src/editor/sidebar/model/arrange";
import { activity, summarize, totals, type FeedBucket } from "../../src/editor/sidebar/model/feed";
import { gateProblems, type EditorConfig, type EditorGate } from "../../src/editor/sidebar/model/health";
import { configNames } from "../../src/editor/sidebar/model/names";
import { formatSeconds, refusal, usageRows, type SidebarTranslate } from "../../src/editor/sidebar/model/words";
import { heldLines, historyLines, historyOff } from "../../src/editor/sidebar/model/recipientRows";
import { ROOT } from "../support/nodeRedProcess";

const catalog = JSON.parse(readFileSync(join(ROOT, "plugins", "locales", "en-US", "admission-sidebar.json"), "utf8")) as { admission: unknown };

/** The plugin's catalog as the editor's RED._ reads it: a missing key fails the test instead of showing itself. */
const t: SidebarTranslate = (key, params = {}) => {
  let at: unknown = catalog.admission;
  for (const part of key.split(".")) at = (at as Record<string, unknown> | undefined)?.[part];
  assert.equal(typeof at, "string", `catalog key admission.${key}`);
  return (at as string).replace(/__(\w+)__/g, (_, name: string) => String(params[name]));
};

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourcesUnder(path) : path.endsWith(".ts") ? [path] : [];
  });
}

const bucket = (at: number, counts: Partial<FeedBucket>): FeedBucket => ({
  t: at, allowed: 0, skipped: 0, deferred: 0, errors: 0, failOpen: 0, held: 0, wouldRefuse: 0, skippedBy: {}, ...counts,
});

const gate = (over: Partial<EditorGate> = {}): EditorGate => ({
  id: "g", type: "frequency-cap-gate", label: "sms caps", tab: "t1", config: "c1", valid: true, validationErrors: [],
  status: null, disabled: false, changed: false, ...over,
});

describe("editor plugin: the Admission sidebar's model (src/editor/sidebar/model)", () => {
  it("takes every text of the sidebar from its catalog, and each key it asks for is there", () => {
    const keys = sourcesUnder(join(ROOT, "src", "editor", "sidebar"))
      .flatMap((file) => [...readFileSync(file, "utf8").matchAll(/\bt\("([a-zA-Z.]+)"\s*[,)]/g)].map((m) => m[1] as string));
    assert.ok(keys.length > 40, `${keys.length} keys found`);
    for (const key of keys) t(key, {});
    // keys built at run time
    for (const kind of ["allowed", "skipped", "deferred", "errors"]) t(`stat.${kind}`);
    for (const unit of ["s", "min", "h", "d"]) t(`time.${unit}`, { n: 1 });
    for (const where of ["flow", "runtime"]) t(`problem.where.${where}`);
    for (const key of ["state.idle", "state.notDeployed", "state.noCounts", "shadow", "shadowOrg", "usage.free", "usage.wouldRefuse"]) t(key, {});
  });

  const now = 1_000_000_005_000; // 5 s into a 10 s bucket

  it("sums the buckets of the last five minutes into 30 bars, oldest first, and ranks skip reasons", () => {
    const newest = now - 5_000;
    const feed = {
      id: "g", type: "frequency-cap-gate",
      recent: [
        bucket(newest - 310_000, { allowed: 99 }), // older than five minutes: left out
        bucket(newest - 290_000, { allowed: 1, skipped: 2, skippedBy: { opted_out: 2 } }),
        bucket(newest - 10_000, { allowed: 3, deferred: 1, failOpen: 1, held: 2, wouldRefuse: 1 }),
        bucket(newest, { skipped: 4, errors: 1, skippedBy: { frequency_capped: 3, opted_out: 1 } }),
      ],
    };
    const s = summarize(feed, now, 300_000, 10_000);
    assert.deepEqual([s.allowed, s.skipped, s.deferred, s.errors, s.failOpen, s.held, s.wouldRefuse], [4, 6, 1, 1, 1, 2, 1]);
    assert.deepEqual(s.skippedBy, [{ reason: "frequency_capped", count: 3 }, { reason: "opted_out", count: 3 }]);
    assert.equal(s.bars.length, 30);
    assert.equal(s.bars[29]?.t, newest);
    assert.deepEqual([s.bars[0]?.allowed, s.bars[0]?.skipped], [1, 2]);
    assert.deepEqual([s.bars[28]?.allowed, s.bars[28]?.deferred], [3, 1]);
    assert.deepEqual([s.bars[29]?.skipped, s.bars[29]?.errors], [4, 1]);
    assert.equal(s.bars.slice(1, 28).every((b) => b.allowed + b.skipped + b.deferred + b.errors === 0), true);
    assert.equal(activity(s, 2), 4 + 6 + 1 + 1 + 2);
    assert.equal(activity(null, 0), 0);
  });

  it("adds up a gate's totals since deploy, fail-open and overloaded together", () => {
    assert.deepEqual(totals({
      id: "g", type: "frequency-cap-gate",
      left: [
        { output: "allowed", reason: "none", count: 5 }, { output: "allowed", reason: "fail_open", count: 2 },
        { output: "allowed", reason: "overloaded", count: 1 }, { output: "skipped", reason: "opted_out", count: 4 },
      ],
      errors: [{ reason: "invalid_send", count: 3 }],
    }), { allowed: 8, skipped: 4, deferred: 0, errors: 3, failOpen: 3 });
  });

  it("turns usage into bars: shadow marked, full when nothing remains, over-full capped at 100 %", () => {
    const rows = usageRows({
      caps: [
        { cap_id: "a", scope: "channel", channel: "sms", count: 1, max_count: 4, remaining: 3, retry_after_seconds: 0, window_seconds: 3600 },
        { cap_id: "b", scope: "global", channel: "*", count: 7, max_count: 5, remaining: 0, retry_after_seconds: 90, window_seconds: 86400, enforcement: "shadow" },
      ],
    }, t);
    assert.deepEqual(rows.map((r) => [r.id, r.shadow, r.fraction, r.full, r.retry, r.scope, r.window]), [
      ["a", false, 0.25, false, 0, "sms", "1 h"],
      ["b", true, 1, true, 90, "every channel", "1 d"],
    ]);
  });

  it("says why the inspector cannot read: a missing permission names frequency-cap.read", () => {
    assert.match(refusal(401, { message: "Unauthorized" }, t), /frequency-cap\.read permission/);
    assert.match(refusal(404, { error: "no deployed cap-config" }, t), /not deployed/);
    assert.match(refusal(400, { error: "channel: unknown channel \"pigeon\"" }, t), /Check the fields: channel: unknown channel "pigeon"/);
    assert.equal(refusal(500, {}, t), "Usage could not be read (HTTP 500).");
    assert.equal(refusal(0, undefined, t), "Node-RED did not answer.");
  });

  it("writes waits as people read them", () => {
    assert.deepEqual([0, 5, 75, 3600, 3660, 90_000, null].map((s) => formatSeconds(s, t)), ["0 s", "5 s", "1 min 15 s", "1 h", "1 h 1 min", "1 d 1 h", "never"]);
  });

  it("words a recipient's verdicts and held msgs from the history and held APIs", () => {
    const history = {
      enabled: true,
      entries: [
        { at: "2026-12-05T09:00:02.000Z", gate: "cap", outcome: "skipped", reason: "frequency_capped", cap_ids: ["daily", "weekly"], retry_after_seconds: 3700 },
        { at: "2026-12-05T09:00:01.000Z", gate: "cap", outcome: "allowed", cap_ids: ["daily"] },
        { at: "2026-12-05T09:00:00.000Z", gate: "quiet", outcome: "deferred", reason: "quiet_hours", retry_after_seconds: null },
        { at: "2026-12-05T08:59:00.000Z", gate: "sup", outcome: "something new" },
      ],
    };
    assert.deepEqual(historyLines(history, t).map((l) => [l.gate, l.outcome, l.text]), [
      ["cap", "skipped", "skipped · frequency_capped (daily, weekly) · retry in 1 h 1 min"],
      ["cap", "allowed", "allowed · daily"],
      ["quiet", "deferred", "deferred · quiet_hours"],
      ["sup", "allowed", "allowed"],
    ]);
    assert.equal(historyOff(history), false);
    assert.equal(historyOff({ enabled: false, entries: [] }), true);
    assert.deepEqual(historyLines(null, t), []);
    const now = Date.parse("2026-12-05T09:00:00.000Z");
    const held = { held: [
      { gate: "quiet", due_at: "2026-12-05T15:00:00.000Z", reason: "quiet_hours", deferrals: 1 },
      { gate: "cap", due_at: "2026-12-05T09:01:30.000Z", reason: "frequency_capped", deferrals: 3 },
    ] };
    assert.deepEqual(heldLines(held, now, t).map((l) => [l.gate, l.text]), [
      ["cap", "frequency_capped · due in 1 min 30 s · deferred 3 times"],
      ["quiet", "quiet_hours · due in 6 h"],
    ], "soonest first");
  });

  describe("a gate's problems", () => {
    const configs = new Map<string, EditorConfig>([
      ["c1", { id: "c1", name: "shop caps", valid: true, validationErrors: [] }],
      ["bad", { id: "bad", name: "broken caps", valid: false, validationErrors: ["rules: not valid JSON (Unexpected token)"] }],
    ]);

    it("names an invalid cap-config's own problem, where the editor only says \"config\"", () => {
      assert.deepEqual(gateProblems(gate({ config: "bad", valid: false, validationErrors: ["config"] }), configs, "broken caps", t), [
        { where: "flow", text: "cap-config \"broken caps\" is invalid: rules: not valid JSON (Unexpected token)" },
      ]);
      assert.deepEqual(gateProblems(gate({ config: "" }), configs, "", t), [{ where: "flow", text: "no cap-config selected" }]);
      assert.deepEqual(gateProblems(gate({ config: "gone" }), configs, "", t), [{ where: "flow", text: "its cap-config is not in the flows" }]);
    });

    it("gives the dialog's reasons and the deployed node's red status, saying which is which", () => {
      const broken = gate({
        valid: false, validationErrors: ["deferMax (Defer limit): must be whole seconds from 0 to 31,622,400, got -5", "mode"],
        status: { fill: "red", shape: "ring", text: "invalid deferMax" },
      });
      assert.deepEqual(gateProblems(broken, configs, "shop caps", t), [
        { where: "flow", text: "deferMax (Defer limit): must be whole seconds from 0 to 31,622,400, got -5" },
        { where: "flow", text: "mode is invalid" },
        { where: "runtime", text: "invalid deferMax" },
      ]);
      // the deployed node is broken though the flow as edited is not (fixed, not deployed yet)
      assert.deepEqual(gateProblems(gate({ status: { fill: "red", shape: "ring", text: "cap-config invalid" } }), configs, "shop caps", t),
        [{ where: "runtime", text: "cap-config invalid" }]);
    });

    it("leaves healthy, yellow (fail-open, connecting) and disabled gates alone", () => {
      assert.deepEqual(gateProblems(gate({ status: { fill: "green", shape: "dot", text: "✓ 3 · ✗ 0" } }), configs, "shop caps", t), []);
      assert.deepEqual(gateProblems(gate({ status: { fill: "yellow", shape: "ring", text: "fail-open: redis down" } }), configs, "shop caps", t), []);
      assert.deepEqual(gateProblems(gate({ disabled: true, config: "", status: { fill: "red", text: "cap-config invalid" } }), configs, "", t), []);
    });
  });

  it("names cap-configs by name, else by the editor's label, told apart when two read the same; never by id alone", () => {
    const names = configNames([
      { id: "a1b2c3d4e5f60001", name: "shop caps", label: "" },
      { id: "a1b2c3d4e5f60002", name: "", label: "memory · 2 caps" },
      { id: "a1b2c3d4e5f60003", name: "", label: "memory · 2 caps" },
      { id: "a1b2c3d4e5f60004", name: "", label: "" },
    ]);
    assert.deepEqual([...names.values()], ["shop caps", "memory · 2 caps · 0002", "memory · 2 caps · 0003", "cap-config"]);
  });

  describe("arranging many gates", () => {
    const tabs: TabInfo[] = Array.from({ length: 10 }, (_, i) => ({ id: `t${i + 1}`, label: `Campaign ${i + 1}`, kind: "tab", disabled: false }));
    const view = (id: string, tab: string, over: Partial<GateView> = {}): GateView => ({
      id, type: "frequency-cap-gate", label: id, tab, configName: "shop caps", problems: [], feed: null, summary: null,
      heldNow: 0, activity: 0, disabled: false, changed: false, ...over,
    });
    const gates = tabs.flatMap((tab) => [view(`${tab.id}-a`, tab.id), view(`${tab.id}-b`, tab.id)]);
    gates[5] = view("t3-b", "t3", { activity: 7 });
    gates[4] = view("t3-a", "t3", { activity: 2 });
    gates[17] = view("t9-b", "t9", { problems: [{ where: "runtime", text: "invalid deferMax" }] });
    const none = new Map<string, boolean>();

    it("lists broken gates first, then every gate under its tab in the editor's order, busy first; idle tabs folded", () => {
      const laid = arrange(gates, tabs, { filter: "", busyOnly: false, opened: none });
      assert.deepEqual(laid.attention.map((g) => g.id), ["t9-b"]);
      assert.deepEqual(laid.groups.map((g) => g.tab.id), tabs.map((tab) => tab.id));
      const t3 = laid.groups[2];
      assert.deepEqual(t3?.gates.map((g) => g.id), ["t3-b", "t3-a"], "the busiest first");
      assert.deepEqual([t3?.busy, t3?.open], [2, true]);
      assert.deepEqual(laid.groups.filter((g) => g.open).map((g) => g.tab.id), ["t3", "t9"], "only tabs with something going on start open");
      assert.deepEqual(laid.groups[8]?.gates.map((g) => g.id), ["t9-b", "t9-a"], "a broken gate heads its tab");
      assert.deepEqual([laid.shown, laid.total], [20, 20]);
    });

    it("keeps the user's folding, and finds gates by name, tab, cap-config or problem", () => {
      const laid = arrange(gates, tabs, { filter: "", busyOnly: false, opened: new Map([["t3", false], ["t1", true]]) });
      assert.deepEqual(laid.groups.filter((g) => g.open).map((g) => g.tab.id), ["t1", "t9"]);
      const found = arrange(gates, tabs, { filter: "campaign 1", busyOnly: false, opened: none });
      assert.deepEqual(found.groups.map((g) => g.tab.id), ["t1", "t10"], "by tab label");
      assert.equal(found.groups.every((g) => g.open), true, "what a filter finds is shown");
      assert.deepEqual(arrange(gates, tabs, { filter: "DEFERMAX", busyOnly: false, opened: none }).attention.map((g) => g.id), ["t9-b"], "by problem");
      assert.equal(arrange(gates, tabs, { filter: "nothing like it", busyOnly: false, opened: none }).shown, 0);
    });

    it("shows only busy and broken gates when asked", () => {
      const laid = arrange(gates, tabs, { filter: "", busyOnly: true, opened: none });
      assert.deepEqual(laid.groups.map((g) => [g.tab.id, g.gates.map((x) => x.id)]), [["t3", ["t3-b", "t3-a"]], ["t9", ["t9-b"]]]);
    });
  });
});
