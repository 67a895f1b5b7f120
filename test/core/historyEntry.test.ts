import assert from "node:assert/strict";
import { decodeEntry, encodeEntry, entryText, gateTag, MAX_ENTRY_BYTES, type HistoryEntry } from "../../src/core/history/historyEntry";
import { HistoryStamp } from "../../src/core/history/claimHistory";
import type { ApplicableCap } from "../../src/core/caps/decisions";
import { DecisionHistory } from "../../src/core/history/decisionHistory";
import { MemoryStore } from "../../src/core/store/memoryStore";
import { verdictText } from "../../src/core/history/verdictText";

describe("decision history entries", () => {
  it("read back what was written, whatever the ids hold", () => {
    const entries: HistoryEntry[] = [
      { at: 1_765_000_000_123, gate: "a1b2.c3", gate_type: "frequency-cap-gate", outcome: "skipped", reason: "frequency_capped", cap_ids: ["__proto__", "a|b,c", "ü%u41"], retry_after_seconds: 3600 },
      { at: 1, gate: "g", gate_type: "suppression-gate", outcome: "allowed" },
      { at: 2, gate: "g", gate_type: "a-gate-of-later-days", outcome: "deferred", reason: "quiet_hours", retry_after_seconds: null },
      { at: 3, gate: "g", gate_type: "throughput-gate", outcome: "recorded", reason: "fail_open" },
    ];
    for (const entry of entries) {
      const text = encodeEntry(entry);
      assert.doesNotMatch(text, /\n/);
      assert.deepEqual(decodeEntry(text), entry, text);
    }
  });

  it("keeps every entry within 64 bytes: a gate id past 16 chars as its tag, the caps that do not fit counted", () => {
    const longGate = "a-gate-id-of-a-generated-flow-that-is-long";
    const caps = ["cap-one-with-long-id", "cap-two-with-long-id", "cap-three-with-long-id"];
    const text = entryText(1_765_000_000_123, "frequency-cap-gate", longGate, "skipped", "frequency_capped", caps, 86_400);
    assert.ok(text.length <= MAX_ENTRY_BYTES, `${text.length}: ${text}`);
    const entry = decodeEntry(text);
    assert.equal(entry?.gate, gateTag(longGate));
    assert.notEqual(gateTag(longGate), gateTag(`${longGate}2`));
    assert.deepEqual(entry?.cap_ids, caps.slice(0, 1));
    assert.equal(entry?.cap_ids_left_out, 2);
    assert.equal(entry?.retry_after_seconds, 86_400, "the parts after the caps are whole");
    // no room for even one: all counted
    const cut = decodeEntry(entryText(1, "frequency-cap-gate", "g", "allowed", undefined, ["x".repeat(60), "y"], undefined));
    assert.equal(cut?.cap_ids, undefined);
    assert.equal(cut?.cap_ids_left_out, 2);
    // a Node-RED id (16 hex digits) and caps that fit are kept whole
    const whole = decodeEntry(entryText(1, "frequency-cap-gate", "0123456789abcdef", "allowed", undefined, ["daily", "weekly"], undefined));
    assert.deepEqual([whole?.gate, whole?.cap_ids, whole?.cap_ids_left_out], ["0123456789abcdef", ["daily", "weekly"], undefined]);
    // an allowed claim's text, written by the store with its clock before it, is bounded alike
    const stamp = new HistoryStamp(10, 86_400_000, "frequency-cap-gate", longGate);
    const stored = `${(1_765_000_000_123).toString(16)}${stamp.claimed(caps.map((id) => ({ rule: { id } }) as unknown as ApplicableCap)).after}`;
    assert.ok(stored.length <= MAX_ENTRY_BYTES, `${stored.length}: ${stored}`);
    assert.equal(decodeEntry(stored)?.cap_ids_left_out, 2);
    const fits = decodeEntry(entryText(1_765_000_000_123, "frequency-cap-gate", longGate, "allowed", undefined, caps, undefined));
    assert.deepEqual(decodeEntry(stored), fits, "a claim's entry is the entry a gate would write");
  });

  it("shares one claim history among a gate's claims on the same caps, and makes another for other caps", () => {
    const rules = ["daily", "weekly", "__proto__"].map((id) => ({ id }));
    const capsOf = (...at: number[]) => at.map((i) => ({ rule: rules[i] }) as unknown as ApplicableCap);
    const stamp = new HistoryStamp(5, 60_000, "frequency-cap-gate", "0123456789abcdef");
    const first = stamp.claimed(capsOf(0, 1));
    assert.equal(stamp.claimed(capsOf(0, 1)), first, "the same object: the store sends it once a call");
    const other = stamp.claimed(capsOf(0, 2));
    assert.notEqual(other, first);
    assert.deepEqual(decodeEntry(`1${other.after}`)?.cap_ids, ["daily", "__proto__"]);
    assert.deepEqual([other.keep, other.lifetimeMs], [5, 60_000]);
    assert.deepEqual(decodeEntry(`1${stamp.claimed(capsOf(0, 1)).after}`)?.cap_ids, ["daily", "weekly"]);
  });

  it("skips text that is no entry", () => {
    for (const text of ["", "x", "1|0|g|9|||", "xyz|0|g|0|||", "1|0|g||||"]) assert.equal(decodeEntry(text), undefined, text);
  });

  const verdictEntry = (...args: Parameters<typeof verdictText>): HistoryEntry | undefined => {
    const text = verdictText(...args);
    return text === undefined ? undefined : decodeEntry(text);
  };

  it("takes a gate's own trail entry, with the caps that refused it or that it claimed", () => {
    const at = "2026-12-05T04:00:00.000Z";
    const refused = verdictEntry({
      gate: "frequency-cap-gate", blocking_cap_ids: ["daily", "weekly"], retry_after_seconds: 60, claims: [],
      trail: [{ gate: "suppression-gate", status: "allowed", at }, { gate: "frequency-cap-gate", status: "skipped", reason: "frequency_capped", at }],
    }, "n1", "frequency-cap-gate", 0);
    assert.deepEqual(refused, { at: Date.parse(at), gate: "n1", gate_type: "frequency-cap-gate", outcome: "skipped", reason: "frequency_capped", cap_ids: ["daily", "weekly"], retry_after_seconds: 60 });
    const allowed = verdictEntry({
      gate: "frequency-cap-gate", status: "allowed",
      claims: [{ gate: "frequency-cap-gate", kind: "cap", config: "c", store: "memory", member: "m", key: "k", at: "earlier", token: 1, fields: [], cap_ids: ["old"] },
        { gate: "frequency-cap-gate", kind: "cap", config: "c", store: "memory", member: "m", key: "k", at, token: 1, fields: [], cap_ids: ["daily"] }],
      trail: [{ gate: "frequency-cap-gate", status: "allowed", at }],
    }, "n1", "frequency-cap-gate", 0);
    assert.deepEqual(allowed?.cap_ids, ["daily"], "only this verdict's claim");
    assert.equal(verdictEntry({ trail: [{ gate: "suppression-gate", status: "allowed", at }] }, "n1", "frequency-cap-gate", 0), undefined, "not this gate's");
    assert.equal(verdictEntry(undefined, "n1", "frequency-cap-gate", 0), undefined);
  });

  it("bounds what waits to be written, and counts what it drops; a read answers the last `size`, newest first", async () => {
    const store = new MemoryStore();
    const history = new DecisionHistory(store, { keyPrefix: "p", size: 2, maxPending: 4, flushMs: 60_000 });
    const entry = (at: number): string => encodeEntry({ at, gate: "g", gate_type: "suppression-gate", outcome: "allowed" });
    for (let at = 1; at <= 3; at++) history.note("o", "r1", entry(at));
    history.note("o", "r2", entry(4));
    history.note("o", "r3", entry(5));
    assert.equal(history.dropped, 1, "the fifth waiting entry is dropped");
    assert.deepEqual((await history.read("o", "r1")).map((e) => e.at), [3, 2]);
    assert.deepEqual((await history.read("o", "r2")).map((e) => e.at), [4]);
    assert.deepEqual(await history.read("o", "r3"), []);
    assert.equal(history.written, 4);
    await store.close();
  });
});
