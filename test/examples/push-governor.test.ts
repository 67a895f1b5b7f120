import assert from "node:assert/strict";
import type { Msg } from "../support/nodeRed";
import { helperSuite } from "../support/helperSuite";
import { admissionOf, ExampleRun, injectProps } from "../support/exampleRun";
import { readExample } from "../support/exampleFlow";
import { clearOfBoundary, QUIET, quietRecipientAt, THREE_ZONES } from "../support/threeZones";

/**
 * examples/push-governor.json as shipped, its steps pressed in the order its
 * comments give, asserting on what leaves its debug nodes: "sent" (the quiet
 * hours gate's allowed), "refused" (either gate's skipped), "held, then
 * released" (either gate's deferred), "error" (the Catch).
 */
const flow = readExample("push-governor.json");

const recipients = (list: Msg[]) => list.map((m) => m.recipient);
const city = (zone: string) => zone.split("/")[1];
const capIds = (list: Msg[]) => list.map((m) => admissionOf(m).cap_id);

describe("examples/push-governor.json", function () {
  this.timeout(90_000);
  helperSuite();

  it("①–④: the topic cap, then tier P2's, then the global cap refuse alice, each named; a P0 passcode still goes, exempt", async () => {
    const run = await ExampleRun.load(flow);
    await run.press("P2 price-drop to alice", { times: 3 });
    assert.equal(run.of("sent").length, 2);
    assert.deepEqual(capIds(run.of("refused")), ["per-topic"], "2 price-drops a minute: the 3rd is over the topic cap alone");

    await run.press("P2 back-in-stock to alice", { times: 2 });
    assert.equal(run.of("sent").length, 3, "another topic has its own counter: its first goes");
    assert.deepEqual(capIds(run.of("refused")), ["per-topic", "tier-p2"], "a 4th P2 push is over the tier's 3, whatever the topic");
    assert.deepEqual(admissionOf(run.of("refused")[1]).blocking_cap_ids, ["tier-p2"]);

    await run.press("P1 order shipped to alice", { times: 2 });
    assert.equal(run.of("sent").length, 4, "P1 has no tier cap: its first goes");
    assert.deepEqual(capIds(run.of("refused")), ["per-topic", "tier-p2", "global"], "a 5th push of any tier is over the global 4");
    const global = admissionOf(run.of("refused")[2]);
    assert.equal(global.max_count, 4);
    assert.equal(global.reason, "frequency_capped");

    await run.press("P0 passcode to alice");
    const passcode = run.of("sent").at(-1);
    assert.equal(passcode?.payload, "Your code is 482913");
    assert.equal(admissionOf(passcode).reason, "exempt", "P0 is neither checked nor counted");
    assert.equal(run.of("sent").length, 5);
    assert.equal(run.of("refused").length, 3);
    assert.equal(run.of("held, then released").length, 0);
    assert.equal(run.of("error").length, 0);
  });

  it("⑤: the 1st digest goes; the 2nd and 3rd are held and merged; one msg leaves when the slot frees, with msg.collapsed", async () => {
    const run = await ExampleRun.load(flow);
    await run.press("P3 digest item to bob");
    await run.press("P3 digest item to bob", { times: 2, holds: 1 });
    assert.equal(run.of("sent").length, 1, "only the first went out");
    assert.equal(run.of("refused").length, 0, "a capped digest is held, not refused");
    assert.equal(await run.queueOf(run.id("frequency-cap-gate", "push caps")).size(), 1, "the 3rd merged into the 2nd: one held msg");

    // the tier P3 cap frees 20 s after the first digest: the held msg comes out of deferred, goes
    // back round the chain and is sent, once
    await run.until(() => run.of("sent").length === 2, "the collapsed digest was sent", 40_000);
    const [released] = run.of("held, then released");
    const firstSentAt = Date.parse(String((admissionOf(run.of("sent")[0]).trail as { gate: string; at: string }[]).find((t) => t.gate === "frequency-cap-gate")?.at));
    assert.ok(Date.parse(String(admissionOf(released).release_at)) >= firstSentAt + 19_000, "released when the 20 s window of the first digest freed its slot");
    assert.equal(run.of("held, then released").length, 1);
    assert.equal(admissionOf(released).status, "deferred");
    assert.equal(admissionOf(released).reason, "frequency_capped");
    assert.equal(admissionOf(released).cap_id, "tier-p3-digest");
    const sent = run.of("sent")[1];
    assert.equal(sent?.recipient, "bob");
    const collapsed = sent?.collapsed as Msg[] | undefined;
    assert.ok(Array.isArray(collapsed), "msg.collapsed on the msg that left");
    assert.equal(collapsed.length, 2, "the 2nd and 3rd digests, merged");
    assert.deepEqual(recipients(collapsed), ["bob", "bob"]);
    assert.deepEqual(collapsed.map((m) => m.payload), ["3 new posts in your groups", "3 new posts in your groups"]);
    assert.equal(await run.queueOf(run.id("frequency-cap-gate", "push caps")).size(), 0);
    assert.equal(run.of("refused").length, 0);
  });

  it("⑥–⑦: a recipient's own limit lowers the topic cap (carol: 1), and one asking for more than the cap does not raise it (dan: 5 → 2)", async () => {
    const run = await ExampleRun.load(flow);
    await run.press("P2 price-drop to carol (wants 1)", { times: 2 });
    assert.deepEqual(recipients(run.of("sent")), ["carol"]);
    const carol = admissionOf(run.of("refused")[0]);
    assert.equal(carol.cap_id, "per-topic");
    assert.equal(carol.max_count, 1, "min(max_count 2, recipientLimits 1)");

    await run.press("P2 price-drop to dan (asks for 5)", { times: 3 });
    assert.deepEqual(recipients(run.of("sent")), ["carol", "dan", "dan"], "dan asked for 5 and got the cap's 2");
    assert.deepEqual(recipients(run.of("refused")), ["carol", "dan"]);
    const dan = admissionOf(run.of("refused")[1]);
    assert.equal(dan.cap_id, "per-topic");
    assert.equal(dan.max_count, 2, "min(max_count 2, recipientLimits 5): a preference never raises a cap");
  });

  it("⑧: of aiko (Tokyo), ngozi (Lagos) and pat (Phoenix), exactly the one in 22:00–06:00 now is held, until 06:00 there plus at most the jitter", async () => {
    const run = await ExampleRun.load(flow);
    for (const { recipient, zone } of THREE_ZONES) {
      // the reasoning of THREE_ZONES holds for the flow as shipped: these zones, this window
      const props = injectProps(run.flow.find((n) => n.id === run.id("inject", `P1 reminder to ${recipient} (${city(zone)})`)));
      assert.equal(props.recipient, recipient);
      assert.equal(props.timezone, zone);
      assert.deepEqual(JSON.parse(String(props.quietHours)), { start: QUIET.start, end: QUIET.end, days: [0, 1, 2, 3, 4, 5, 6] });
    }
    await clearOfBoundary();
    const expected = quietRecipientAt(Date.now());
    for (const { recipient, zone } of THREE_ZONES) {
      await run.press(`P1 reminder to ${recipient} (${city(zone)})`, recipient === expected.recipient ? { holds: 1 } : {});
    }
    assert.deepEqual(recipients(run.of("sent")).sort(), THREE_ZONES.map((z) => z.recipient).filter((r) => r !== expected.recipient).sort());
    assert.equal(run.of("refused").length, 0);
    const quiet = run.queueOf(run.id("quiet-hours-gate", "quiet hours"));
    assert.equal(await quiet.size(), 1, `${expected.recipient} is held by quiet hours`);
    const releaseAt = await quiet.nextDueAt();
    const jitterMs = Number(run.flow.find((n) => n.type === "quiet-hours-gate")?.jitter) * 1000;
    assert.ok(releaseAt !== null && releaseAt >= expected.endsAt && releaseAt < expected.endsAt + jitterMs,
      `${expected.recipient} is released at ${releaseAt === null ? "never" : new Date(releaseAt).toISOString()}, not in [06:00 ${expected.zone} = ${new Date(expected.endsAt).toISOString()}, + ${jitterMs / 1000} s)`);
    // the cap slots the held msg took were given back: nothing of it is counted while it waits
    assert.equal(await run.queueOf(run.id("frequency-cap-gate", "push caps")).size(), 0);
  });

  it("⑨: a push without a tier is an error (requireTier) that reaches the Catch, naming the field", async () => {
    const run = await ExampleRun.load(flow);
    await run.press("push without a tier");
    assert.equal(run.of("error").length, 1);
    assert.match(String((run.of("error")[0]?.error as { message?: string }).message), /tier/);
    assert.equal(run.of("sent").length + run.of("refused").length, 0);
  });
});
