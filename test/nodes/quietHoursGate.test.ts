import assert from "node:assert/strict";
import { Collector, flowNode, gateNodes, helper, TAB, type Msg } from "../support/nodeRed";
import quietHoursGate from "../../src/nodes/quietHoursGate";
import { sleep, uniquePrefix } from "../support/redis";
import { storeFields } from "../support/chainFlow";
import { SuiteStore, type StoreKind } from "../support/suiteStore";

const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
const nextMinute = (ms: number) => Math.floor(ms / 60_000) * 60_000 + 60_000;

/**
 * A UTC quiet window that began two minutes ago and ends at the first minute boundary at least 15 s away, so a test
 * that starts late in a minute does not see its window end while it is still sending (a burst of 2,000 takes a while).
 */
function windowAroundNow(): { start: string; end: string; endsAt: number } {
  const now = Date.now();
  const endsAt = nextMinute(now + 15_000);
  return { start: hhmm(now - 120_000), end: hhmm(endsAt), endsAt };
}

/** `twin`: a second gate beside it ("quietJ"), the same but for its jitter, into the same outputs */
async function deployOn(gate: Record<string, unknown>, store: SuiteStore, keyPrefix = uniquePrefix("quiet"), twin?: { jitter: number }) {
  await helper.load([...gateNodes, quietHoursGate], [
    TAB,
    { id: "cfg", type: "cap-config", ...storeFields(store), keyPrefix, rules: [] },
    flowNode({ id: "quiet", type: "quiet-hours-gate", config: "cfg", timezone: "UTC", jitter: 0, ...gate, wires: [["allowed"], ["skipped"], ["deferred"]] }),
    ...(twin ? [flowNode({ id: "quietJ", type: "quiet-hours-gate", config: "cfg", timezone: "UTC", ...gate, jitter: twin.jitter, wires: [["allowed"], ["skipped"], ["deferred"]] })] : []),
    flowNode({ id: "allowed", type: "helper" }), flowNode({ id: "skipped", type: "helper" }), flowNode({ id: "deferred", type: "helper" }),
    flowNode({ id: "catch", type: "catch", scope: null, wires: [["caught"]] }), flowNode({ id: "caught", type: "helper" }),
  ]);
  const out = new Collector(["allowed", "skipped", "deferred", "caught"]);
  const push = async (msg: Record<string, unknown>) => {
    const before = out.total();
    helper.getNode("quiet")?.receive({ recipient: "r", channel: "sms", ...msg });
    await out.until(before + 1);
  };
  return { out, push };
}

const reasonOf = (m: Msg | undefined) => (m?.admission as { reason?: string } | undefined)?.reason;

// the embedded store and a Redis Cluster (its held msgs in the cluster's defer queue); one cap-config's queue sits in one slot by design
for (const kind of ["memory", "redis-cluster"] as StoreKind[]) {
describe(`quiet-hours-gate (window built around the current time, ${kind} store)`, function () {
  this.timeout(110_000);
  const store = new SuiteStore(kind, { spread: false });
  store.hooks();
  const prefixes: string[] = [];
  const deploy = (gate: Record<string, unknown>, twin?: { jitter: number }) => {
    const keyPrefix = uniquePrefix("quiet");
    prefixes.push(keyPrefix);
    return deployOn(gate, store, keyPrefix, twin);
  };
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(async () => {
    await helper.unload();
    for (const p of prefixes.splice(0)) await store.drop(p);
  });

  it("lets a send outside the window through and skips one inside it with the wait until its end", async () => {
    const w = windowAroundNow();
    const { out, push } = await deploy({ start: w.start, end: w.end, disposition: "skip" });
    await push({ messageId: "in" });
    const skipped = out.of("skipped")[0];
    assert.equal(reasonOf(skipped), "quiet_hours");
    const retry = (skipped?.admission as { retry_after_seconds: number }).retry_after_seconds;
    assert.ok(retry >= 15 && retry <= 76 && Math.abs(retry - (w.endsAt - Date.now()) / 1000) < 2, `retry ${retry}`);
    // the same gate, a recipient whose own window (msg.quietHours) is elsewhere in the day
    await push({ messageId: "own-window", quietHours: { start: hhmm(Date.now() + 3 * 3600_000), end: hhmm(Date.now() + 4 * 3600_000) } });
    assert.equal(out.of("allowed")[0]?.messageId, "own-window");
  });

  it("passes exempt tiers and exempt categories", async () => {
    const w = windowAroundNow();
    const { out, push } = await deploy({ start: w.start, end: w.end, disposition: "skip", exemptCategories: "otp, security" });
    await push({ messageId: "p0", tier: "P0" });
    await push({ messageId: "otp", category: "otp" });
    await push({ messageId: "mkt", category: "marketing" });
    assert.deepEqual(out.of("allowed").map((m) => [m.messageId, reasonOf(m)]), [["p0", "exempt"], ["otp", "exempt"]]);
    assert.deepEqual(out.of("skipped").map((m) => m.messageId), ["mkt"]);
  });

  it("uses msg.timezone, and sends an unknown zone to Catch naming it", async () => {
    const w = windowAroundNow();
    const { out, push } = await deploy({ start: w.start, end: w.end, disposition: "skip" });
    // 12 hours away from UTC, the same wall-clock window is not now
    await push({ messageId: "far", timezone: "Pacific/Kiritimati" });
    assert.equal(out.of("allowed")[0]?.messageId, "far");
    await push({ messageId: "mars", timezone: "Mars/Olympus" });
    assert.match(String((out.of("caught")[0]?.error as { message: string }).message), /timezone: unknown time zone "Mars\/Olympus"/);
    await push({ messageId: "bad-override", quietHours: { start: "25:00" } });
    assert.match(String((out.of("caught")[1]?.error as { message: string }).message), /msg\.quietHours\.start/);
  });

  it("holds a send until the window ends and releases it by deferred, not before", async () => {
    const w = windowAroundNow();
    const { out, push } = await deploy({ start: w.start, end: w.end, disposition: "defer" }, { jitter: 10 });
    helper.getNode("quiet")?.receive({ recipient: "r", channel: "sms", messageId: "night", payload: "good morning" });
    // 30 more msgs held at once, 3 for each of 10 recipients, each released exactly once
    for (let i = 0; i < 30; i++) helper.getNode("quiet")?.receive({ recipient: `sleeper-${i % 10}`, channel: "sms", messageId: `s${i}` });
    // beside it, a burst held by a gate with 10 s of jitter, each msg expiring 2.5 s after the window's end: the jitter
    // spreads them over the time they have, so each goes out in time (pulled back to its expiresAt, most left defer_expired);
    // two msgs for each of 1,000 recipients
    const expiresAt = w.endsAt + 2_500;
    for (let i = 0; i < 2_000; i++) helper.getNode("quietJ")?.receive({ recipient: `early-${i % 1_000}`, channel: "sms", messageId: `j${i}`, expiresAt });
    await sleep(200);
    assert.equal(out.total(), 0, "held, not sent");
    await out.until(2_031, 80_000);
    await sleep(500);
    const jittered = out.of("deferred").filter((m) => String(m.messageId).startsWith("j"));
    const expired = out.of("skipped").filter((m) => String(m.messageId).startsWith("j"));
    assert.deepEqual(expired.slice(0, 3).map((m) => [m.messageId, reasonOf(m)]), [], `${expired.length} of the jittered burst left as expired`);
    assert.equal(new Set(jittered.map((m) => m.messageId)).size, 2_000, "each of the burst released once");
    for (const m of jittered) assert.ok(Date.parse((m.admission as { release_at: string }).release_at) <= expiresAt, "released before its expiresAt");
    assert.equal(out.of("deferred").length - jittered.length, 31, "each held msg released once");
    assert.equal(new Set(out.of("deferred").map((m) => m.messageId)).size, 2_031);
    // each recipient's held msgs leave in the order they came in, jittered or not (the spread is per recipient, not per msg)
    const arrival = (m: Msg) => Number(String(m.messageId).slice(1));
    const byRecipient = new Map<string, Msg[]>();
    for (const m of out.of("deferred")) if (m.messageId !== "night") byRecipient.set(String(m.recipient), [...(byRecipient.get(String(m.recipient)) ?? []), m]);
    const inverted = [...byRecipient].filter(([, msgs]) => msgs.some((m, i) => i > 0 && arrival(m) < arrival(msgs[i - 1])));
    assert.deepEqual(inverted.slice(0, 3).map(([r, msgs]) => [r, msgs.map((m) => m.messageId)]), [], `${inverted.length} recipients' msgs out of order`);
    const released = out.of("deferred").find((m) => m.messageId === "night");
    assert.ok(Date.now() >= w.endsAt, "not released before the window's end");
    assert.equal(released?.payload, "good morning");
    const admission = released?.admission as { status: string; reason: string; release_at: string; deferrals: number };
    assert.deepEqual([admission.status, admission.reason, admission.deferrals], ["deferred", "quiet_hours", 1]);
    assert.ok(Date.parse(admission.release_at) >= w.endsAt);
    await push({ ...(released) });
    assert.equal(out.of("allowed").at(-1)?.messageId, "night", "back round the chain after the window it passes");
  });
});
}
