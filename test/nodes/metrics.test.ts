import assert from "node:assert/strict";
import type { Node } from "node-red";
import quietHoursGate from "../../src/nodes/quietHoursGate";
import { Collector, flowNode, gateNodes, helper, TAB, type Msg } from "../support/nodeRed";
import { parsePrometheusText, samples, total, type Family } from "../support/promText";
import { dropPrefix, REDIS_URL, redisClient, sleep, uniquePrefix } from "../support/redis";
import { useUserDir } from "../support/userDir";

const HOUR = 3600;
const ALWAYS_QUIET = { start: "00:00", end: "00:00", days: [0, 1, 2, 3, 4, 5, 6] };
const GATES = { sup: "suppression-gate", cap: "frequency-cap-gate", quiet: "quiet-hours-gate" } as const;
type GateId = keyof typeof GATES;
const OUTPUTS = ["allowed", "skipped", "deferred"] as const;

/**
 * suppression-gate → frequency-cap-gate → quiet-hours-gate, every output of
 * each also wired to a helper of its own (second on the wire, so it gets the
 * copy made when the msg left), Catch to `caught`.
 */
function chainFlow(store: "memory" | "redis", keyPrefix: string, maxQueued: number): object[] {
  const seen = (gate: GateId, output: string) => `${gate}-${output}`;
  return [
    TAB,
    {
      id: "cfg", type: "cap-config", store, redisUrl: REDIS_URL, keyPrefix, timeoutMs: 5000, maxQueued, overloadMode: "open",
      rules: [
        { id: "sms-hourly", scope: "channel", channel: "sms", max_count: 3, window_seconds: HOUR },
        { id: "push-burst", scope: "channel", channel: "push", max_count: 1, window_seconds: 1, disposition: "defer" },
        { id: "trial", scope: "global", max_count: 2, window_seconds: HOUR, enforcement: "shadow" },
      ],
    },
    flowNode({ id: "sup", type: GATES.sup, config: "cfg", duplicateWindow: HOUR, wires: [["cap", seen("sup", "allowed")], [seen("sup", "skipped")]] }),
    flowNode({ id: "cap", type: GATES.cap, config: "cfg", deferMax: 60, wires: [["quiet", seen("cap", "allowed")], [seen("cap", "skipped")], [seen("cap", "deferred")]] }),
    flowNode({ id: "quiet", type: GATES.quiet, config: "cfg", days: [], disposition: "skip", wires: [[seen("quiet", "allowed")], [seen("quiet", "skipped")], [seen("quiet", "deferred")]] }),
    ...(["sup", "cap", "quiet"] as const).flatMap((g) => OUTPUTS.map((o) => flowNode({ id: seen(g, o), type: "helper" }))),
    flowNode({ id: "catch", type: "catch", scope: null, wires: [["caught"]] }),
    flowNode({ id: "caught", type: "helper" }),
  ];
}

/** The i-th msg of the mix: every kind of verdict each gate can give, and bad input. */
function mixMsg(i: number): Record<string, unknown> {
  const messageId = `mix-${i}`;
  const k = Math.floor(i / 10);
  switch (i % 10) {
    case 0: return { messageId, channel: "sms" }; // no recipient: Catch
    case 1: return { messageId, recipient: `blocked-${k % 3}`, channel: "sms", payload: `p${i}` }; // opted out
    case 2: return { messageId, recipient: `dup-${k % 40}`, channel: "email", payload: "the same body" }; // 40 sent, 60 duplicates
    case 3: return { messageId, recipient: `push-${k % 20}`, channel: "push", payload: `p${i}` }; // held, released by deferred
    case 4: return { messageId, recipient: `vip-${k % 7}`, channel: "sms", tier: "P0", payload: `p${i}` }; // exempt
    case 5: return { messageId, recipient: `night-${k}`, channel: "sms", quietHours: ALWAYS_QUIET, payload: `p${i}` }; // quiet hours
    case 6: return { messageId, recipient: `bad-${i}`, channel: "pigeon", payload: `p${i}` }; // unknown channel: Catch
    default: return { messageId, recipient: `sms-${i % 60}`, channel: "sms", payload: `p${i}` }; // five each: capped past 3, shadow past 2
  }
}

function reasonOf(msg: Msg): string {
  const reason = (msg.admission as { reason?: string } | undefined)?.reason;
  return reason ?? "none";
}

/** What the helpers saw, as the metric's series: `gate|outcome|reason` → msgs. */
function observed(out: Collector): Map<string, number> {
  const counts = new Map<string, number>();
  const add = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  for (const gate of ["sup", "cap", "quiet"] as const) {
    for (const output of OUTPUTS) for (const msg of out.of(`${gate}-${output}`)) add(`${gate}|${output}|${reasonOf(msg)}`);
  }
  for (const msg of out.of("caught")) {
    const source = (msg.error as { source?: { id?: string } } | undefined)?.source?.id ?? "?";
    const message = String((msg.error as { message?: string } | undefined)?.message);
    add(`${source}|error|${/^SendFieldError|recipient:|channel:/.test(message) ? "invalid_send" : message}`);
  }
  return counts;
}

function exposed(families: Map<string, Family>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const s of samples(families, "sendgate_msgs_total")) {
    if (s.value > 0) counts.set(`${s.labels.gate}|${s.labels.outcome}|${s.labels.reason}`, s.value);
  }
  return counts;
}

for (const store of ["memory", "redis"] as const) {
  describe(`GET /frequency-cap/:config/metrics after a scripted mix of 1,000 msgs (${store} store)`, function () {
    this.timeout(60_000);
    useUserDir(`metrics-${store}`);
    const redis = redisClient();
    let keyPrefix: string;
    before(() => helper.startServer());
    after(async () => {
      await helper.stopServer();
      await redis.quit();
    });
    beforeEach(() => { keyPrefix = uniquePrefix(`metrics-${store}`); });
    afterEach(async () => {
      await helper.unload();
      await dropPrefix(redis, keyPrefix);
    });

    async function scrape(): Promise<Map<string, Family>> {
      const res = await helper.request().get("/frequency-cap/cfg/metrics");
      assert.equal(res.status, 200, res.text);
      const type = res.headers["content-type"] ?? "";
      assert.match(type, /^text\/plain;/);
      assert.match(type, /version=0\.0\.4/);
      return parsePrometheusText(res.text);
    }

    it("counts every msg by the output it left and why, exactly as the flow saw them, and holds parse strictly", async () => {
      // a small send queue on Redis: part of the burst is refused as overloaded and fails open
      await helper.load([...gateNodes, quietHoursGate], chainFlow(store, keyPrefix, store === "redis" ? 400 : 100_000));
      const ids = (["sup", "cap", "quiet"] as const).flatMap((g) => OUTPUTS.map((o) => `${g}-${o}`));
      const out = new Collector([...ids, "caught"]);
      const sup = helper.getNode("sup") as Node;
      for (const r of ["blocked-0", "blocked-1", "blocked-2"]) sup.receive({ topic: "suppress", recipient: r, channel: "sms" });
      await sleep(200);

      // the burst: 1,000 msgs in one tick
      for (let i = 0; i < 1000; i++) sup.receive(mixMsg(i));
      // every msg ends somewhere: Catch, a skipped output, quiet-hours-gate's outputs, or the defer queue and then cap's deferred
      const ended = () => out.of("caught").length + out.of("sup-skipped").length + out.of("cap-skipped").length
        + out.of("cap-deferred").length + out.of("quiet-allowed").length + out.of("quiet-skipped").length;
      const started = Date.now();
      while (ended() < 1000) {
        if (Date.now() - started > 20_000) assert.fail(`only ${ended()} of 1,000 msgs ended`);
        await sleep(50);
      }
      await sleep(300);

      const families = await scrape();
      const want = observed(out);
      const got = exposed(families);
      assert.deepEqual(new Map([...got].sort()), new Map([...want].sort()));
      assert.equal([...got.values()].reduce((a, b) => a + b, 0), [...want.values()].reduce((a, b) => a + b, 0));

      // the mix reached every kind of verdict
      const n = (key: string) => got.get(key) ?? 0;
      assert.equal(n("sup|error|invalid_send"), 200, "no recipient, unknown channel");
      assert.ok(n("cap|skipped|frequency_capped") > 0);
      assert.ok(n("cap|allowed|exempt") > 0 && n("quiet|allowed|exempt") > 0);
      assert.ok(n("quiet|skipped|quiet_hours") > 0);
      if (store === "redis") {
        const overloaded = total(families, "sendgate_msgs_total", { outcome: "allowed", reason: "overloaded" });
        assert.ok(overloaded > 0, "a burst past maxQueued fails open as overloaded");
      } else {
        // nothing fails open in memory: every verdict is the mix's own
        assert.equal(n("sup|skipped|opted_out"), 100);
        assert.equal(n("sup|skipped|duplicate_content"), 60, "100 sends of one body to 40 recipients");
        assert.equal(n("quiet|skipped|quiet_hours"), 100);
        assert.equal(n("cap|deferred|frequency_capped"), 80, "20 recipients × 5 push msgs, 1 a second: 4 each held and released");
        assert.equal(n("cap|allowed|exempt"), 100);
      }

      // held: every msg the cap gate took into the queue left by its deferred output
      assert.equal(total(families, "sendgate_msgs_held_total", { gate: "cap" }), out.of("cap-deferred").length);
      // shadow: each admitted send that listed the trial cap counted once
      const shadowed = out.of("cap-allowed").filter((m) => ((m.admission as { shadow?: { cap_id: string }[] }).shadow ?? []).some((s) => s.cap_id === "trial")).length;
      assert.ok(shadowed > 0);
      assert.equal(total(families, "sendgate_shadow_would_refuse_total", { gate: "cap", cap_id: "trial", org: "*" }), shadowed);

      // the send path's state
      assert.deepEqual(samples(families, "sendgate_circuit_state").map((s) => [s.labels.state, s.value]).sort(), [["closed", 1], ["half_open", 0], ["open", 0]]);
      assert.equal(total(families, "sendgate_send_queue_length"), 0);
      assert.equal(total(families, "sendgate_held_msgs"), 0);
      assert.equal(total(families, "sendgate_info", { store, rules_source: "inline", fail_mode: "open" }), 1);
      assert.ok(samples(families, "sendgate_msgs_total").every((s) => s.labels.config === "cfg"), "every series names its cap-config");
      const calls = total(families, "sendgate_store_call_duration_seconds_count", { lane: "claim", result: "ok" });
      if (store === "redis") {
        assert.equal(total(families, "sendgate_send_queue_max"), 400);
        assert.ok(calls > 0 && calls < 1000, `claims went in batches: ${calls} calls`);
      } else {
        assert.equal(calls, 0, "the memory store answers in-process: no store calls to time");
      }
    });

    it("shows the msgs held in the defer queue", async () => {
      await helper.load([...gateNodes, quietHoursGate], chainFlow(store, keyPrefix, 100_000));
      const cap = helper.getNode("cap") as Node;
      for (let i = 0; i < 4; i++) cap.receive({ recipient: "p", channel: "push", messageId: `h${i}` });
      await sleep(300);
      const families = await scrape();
      assert.equal(total(families, "sendgate_held_msgs"), 3);
      assert.equal(total(families, "sendgate_msgs_held_total", { gate: "cap", reason: "frequency_capped" }), 3);
    });
  });
}
