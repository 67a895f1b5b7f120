import assert from "node:assert/strict";
import { SendFieldError, StoreUnavailableError } from "../../src/core/errors";
import { AdmissionMetrics } from "../../src/core/metrics/admissionMetrics";
import { BUCKET_MS, BUCKETS, GateCounts } from "../../src/core/metrics/gateCounts";
import { RuleCacheStats } from "../../src/core/rules/ruleCache";
import { SendQueue, type Lane, type StoreCall } from "../../src/core/sendQueue/sendQueue";
import { CircuitBreaker } from "../../src/core/store/storeGuard";
import { parsePrometheusText, samples, total } from "../support/promText";
import { sleep } from "../support/redis";

describe("core/metrics: a gate's counts", () => {
  it("counts by output and reason, takes only known reasons as labels, and keeps the last five minutes in 10 s buckets", () => {
    let now = 1_000_000_000_000;
    const counts = new GateCounts("g1", "frequency-cap-gate", () => now);
    counts.leftBy("allowed", undefined);
    counts.leftBy("allowed", "fail_open");
    counts.leftBy("skipped", "frequency_capped");
    counts.leftBy("skipped", "frequency_capped");
    counts.leftBy("skipped", "constructor"); // a reason no gate writes is never a label value of its own
    counts.failed(new SendFieldError("recipient", "missing"));
    counts.failed(new StoreUnavailableError("overloaded", "full"));
    counts.heldFor("quiet_hours");
    counts.wouldRefuse("trial", undefined);
    counts.wouldRefuse("trial", undefined);
    counts.wouldRefuse("trial", "acme");
    const snap = counts.snapshot();
    assert.deepEqual(snap.left.sort((a, b) => `${a.output}${a.reason}`.localeCompare(`${b.output}${b.reason}`)), [
      { output: "allowed", reason: "fail_open", count: 1 },
      { output: "allowed", reason: "none", count: 1 },
      { output: "skipped", reason: "frequency_capped", count: 2 },
      { output: "skipped", reason: "other", count: 1 },
    ]);
    assert.deepEqual(snap.errors, [{ reason: "invalid_send", count: 1 }, { reason: "overloaded", count: 1 }]);
    assert.deepEqual(snap.held, [{ reason: "quiet_hours", count: 1 }]);
    assert.deepEqual(snap.shadow, [{ cap_id: "trial", org: "*", would_refuse: 2 }, { cap_id: "trial", org: "acme", would_refuse: 1 }]);
    assert.equal(snap.recent.length, 1);
    assert.deepEqual({ ...snap.recent[0], skippedBy: { ...snap.recent[0]?.skippedBy } }, {
      t: now - (now % BUCKET_MS), allowed: 2, skipped: 3, deferred: 0, errors: 2, failOpen: 1, held: 1, wouldRefuse: 3,
      skippedBy: { frequency_capped: 2, other: 1 },
    });

    const version = counts.version;
    now += BUCKET_MS;
    counts.leftBy("deferred", "frequency_capped");
    assert.equal(counts.version, version + 1);
    assert.deepEqual(counts.snapshot().recent.map((b) => b.deferred), [0, 1]);
    // five minutes on, the old buckets are gone; the totals stay
    now += BUCKETS * BUCKET_MS;
    counts.leftBy("allowed", undefined);
    const later = counts.snapshot();
    assert.deepEqual(later.recent.map((b) => b.allowed), [1]);
    assert.equal(later.left.find((l) => l.output === "allowed" && l.reason === "none")?.count, 2);
  });
});

describe("core/metrics: a cap-config's registry", () => {
  it("exposes every gate's counts and the send path's state in the Prometheus text format", async () => {
    const cache = new RuleCacheStats();
    cache.hits = 7;
    cache.misses = 2;
    cache.invalidations.org = 1;
    const metrics = new AdmissionMetrics({ configId: "cfg-1", store: "redis", rulesSource: "postgres", failMode: "closed", maxQueued: 500 });
    metrics.watch({
      storeState: () => "down", rulesState: () => "stale", queueLength: () => 12, circuit: () => ({ state: "open", opens: 3 }),
      held: async () => new Map([["g1", 4], ["gone", 1]]), ruleCache: cache,
    });
    const gate = metrics.gate("g1", "frequency-cap-gate");
    gate.leftBy("allowed", undefined);
    gate.leftBy("skipped", "frequency_capped");
    gate.failed(new Error("boom"));
    gate.wouldRefuse("new-cap", "acme");
    metrics.gate("g2", "suppression-gate").leftBy("skipped", "opted_out");
    metrics.storeCall({ lane: "claim", items: 100, ms: 3, result: "ok" });
    metrics.storeCall({ lane: "claim", items: 100, ms: 70, result: "timeout" });

    const families = parsePrometheusText(await metrics.text());
    assert.equal(total(families, "sendgate_msgs_total", { gate: "g1", gate_type: "frequency-cap-gate", outcome: "allowed", reason: "none" }), 1);
    assert.equal(total(families, "sendgate_msgs_total", { gate: "g1", outcome: "skipped", reason: "frequency_capped" }), 1);
    assert.equal(total(families, "sendgate_msgs_total", { gate: "g1", outcome: "error", reason: "other" }), 1);
    assert.equal(total(families, "sendgate_msgs_total", { gate: "g2", gate_type: "suppression-gate", reason: "opted_out" }), 1);
    assert.equal(total(families, "sendgate_shadow_would_refuse_total", { cap_id: "new-cap", org: "acme" }), 1);
    assert.equal(total(families, "sendgate_store_call_duration_seconds_count", { lane: "claim" }), 2);
    assert.equal(total(families, "sendgate_store_call_duration_seconds_bucket", { lane: "claim", result: "ok", le: "0.005" }), 1);
    assert.equal(total(families, "sendgate_store_call_duration_seconds_bucket", { lane: "claim", result: "timeout", le: "0.05" }), 0);
    assert.equal(total(families, "sendgate_held_msgs", { gate: "g1" }), 4);
    assert.equal(total(families, "sendgate_held_msgs", { gate: "gone" }), 1, "a gate not deployed here still shows what it holds");
    assert.equal(metrics.configSnapshot().held, 4, "the scrape told the gate its count");
    assert.equal(total(families, "sendgate_send_queue_length"), 12);
    assert.equal(total(families, "sendgate_send_queue_max"), 500);
    assert.equal(total(families, "sendgate_circuit_state", { state: "open" }), 1);
    assert.equal(total(families, "sendgate_circuit_state"), 1);
    assert.equal(total(families, "sendgate_circuit_opens_total"), 3);
    assert.equal(total(families, "sendgate_store_state", { state: "down" }), 1);
    assert.equal(total(families, "sendgate_rules_state", { state: "stale" }), 1);
    assert.equal(total(families, "sendgate_rule_cache_hits_total"), 7);
    assert.equal(total(families, "sendgate_rule_cache_misses_total"), 2);
    assert.equal(total(families, "sendgate_rule_cache_invalidations_total", { scope: "org" }), 1);
    assert.equal(total(families, "sendgate_info", { store: "redis", rules_source: "postgres", fail_mode: "closed" }), 1);
    for (const family of families.values()) {
      assert.match(family.name, /^sendgate_/);
      assert.ok(family.help.length > 10, `${family.name} has help`);
      for (const s of family.samples) assert.equal(s.labels.config, "cfg-1", `${s.name} names its cap-config`);
    }

    // counters never go down between scrapes; a removed gate's series go
    gate.leftBy("allowed", undefined);
    metrics.forget("g2");
    const again = parsePrometheusText(await metrics.text());
    assert.equal(total(again, "sendgate_msgs_total", { gate: "g1", outcome: "allowed" }), 2);
    assert.deepEqual(samples(again, "sendgate_msgs_total", { gate: "g2" }), []);
  });

  it("answers a scrape within a second when the defer queue does not answer, with the last count known", async () => {
    const metrics = new AdmissionMetrics({ configId: "c", store: "redis", rulesSource: "inline", failMode: "open", maxQueued: 1 });
    metrics.gate("g", "quiet-hours-gate").holding(9);
    metrics.watch({
      storeState: () => "ready", rulesState: () => "ok", queueLength: () => 0, circuit: () => ({ state: "closed", opens: 0 }),
      held: () => new Promise(() => undefined), ruleCache: new RuleCacheStats(),
    });
    const started = Date.now();
    assert.equal(total(parsePrometheusText(await metrics.text()), "sendgate_held_msgs", { gate: "g" }), 9);
    assert.ok(Date.now() - started < 1500);
  });
});

describe("core/sendQueue: each store call reported for the latency histogram", () => {
  it("reports a call's own round trip, items and result; never the wait in the queue", async () => {
    const calls: StoreCall[] = [];
    const queue = new SendQueue({ maxQueued: 100, maxInFlight: 1, maxBatch: 10, timeoutMs: 200, breaker: new CircuitBreaker(), onCall: (c) => calls.push(c) });
    // each run's own length, however late its 30 ms timer fires on a busy box
    const runs: number[] = [];
    const slow: Lane<number, number> = {
      name: "slow", bounded: true,
      run: async (items) => {
        const began = performance.now();
        await sleep(30);
        runs.push(performance.now() - began);
        return items.map((i) => i * 2);
      },
    };
    const failing: Lane<number, number> = { name: "failing", bounded: true, run: async () => { throw new Error("ECONNRESET"); } };
    const stuck: Lane<number, number> = { name: "stuck", bounded: true, run: () => new Promise(() => undefined) };
    // 25 items, the first at once (the store was idle), then 10 a batch, one batch at a time: the later batches wait ~30 ms each in the queue
    const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => queue.submit(slow, i)));
    assert.equal(answers[24], 48);
    assert.deepEqual(calls.map((c) => [c.lane, c.items, c.result]), [["slow", 1, "ok"], ["slow", 10, "ok"], ["slow", 10, "ok"], ["slow", 4, "ok"]]);
    // the call's own round trip: its run (one at a time), not that plus the run(s) ahead of it, 30 ms or more each
    assert.equal(runs.length, 4);
    calls.forEach((c, i) => {
      const run = runs[i];
      assert.ok(c.ms >= 25 && c.ms >= run - 1 && c.ms < run + 15, `${c.ms} ms is the call (its run took ${run} ms), not the queue`);
    });
    await assert.rejects(queue.submit(failing, 1), StoreUnavailableError);
    await assert.rejects(queue.submit(stuck, 1), (err) => err instanceof StoreUnavailableError && err.kind === "timeout");
    assert.deepEqual(calls.slice(4).map((c) => [c.lane, c.result]), [["failing", "error"], ["stuck", "timeout"]]);
  });

  it("answers every item even when the observer throws", async () => {
    const queue = new SendQueue({ maxQueued: 10, maxInFlight: 1, maxBatch: 10, timeoutMs: 100, breaker: new CircuitBreaker(), onCall: () => { throw new Error("observer"); } });
    const echo: Lane<number, number> = { name: "echo", bounded: true, run: async (items) => [...items] };
    assert.deepEqual(await Promise.all([queue.submit(echo, 1), queue.submit(echo, 2)]), [1, 2]);
  });
});
