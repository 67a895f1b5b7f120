import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodeRedProcess, ROOT } from "../support/nodeRedProcess";
import { freePort } from "../support/ports";
import { PrometheusProcess, type AlertState, type VectorSample } from "../support/prometheus";
import { dropPrefix, REDIS_URL, redisClient, uniquePrefix } from "../support/redis";
import { ALERTS_FILE, dashboardExprs } from "../support/monitoringFiles";

/**
 * A real Prometheus (Debian's binary, its own port and data dir, stopped by
 * pid) scraping a real Node-RED every second: three cap-configs (memory,
 * Redis, and Redis on a port where nothing listens), a known mix of sends
 * over HTTP, and the counts read back through Prometheus's query API, exact.
 * The shipped alert rules are loaded and evaluated against the same series,
 * and every dashboard query runs.
 */
const Z = "ops";
let y = 0;
const at = <T extends Record<string, unknown>>(node: T) => ({ z: Z, x: 200, y: (y += 40), ...node });

/** An http-in route whose JSON body `{ send: {…}, body }` becomes a send: its fields on the msg, the body as payload. */
function route(id: string, url: string, next: string[]): Record<string, unknown>[] {
  return [
    at({ id: `${id}-in`, type: "http in", url, method: "post", upload: false, wires: [[`${id}-read`]] }),
    at({ id: `${id}-read`, type: "function", func: "Object.assign(msg, msg.payload.send || {});\nmsg.payload = msg.payload.body;\nreturn msg;", outputs: 1, wires: [next] }),
  ];
}

/** Answers the HTTP request with the output the msg left by and its admission. */
function reply(id: string, outcome: string): Record<string, unknown> {
  return at({
    id, type: "function", outputs: 1, wires: [["respond"]],
    func: `msg.payload = { outcome: ${JSON.stringify(outcome)}, reason: msg.admission && msg.admission.reason };\nmsg.statusCode = 200;\nreturn msg;`,
  });
}

function flow(keyPrefix: string, deadPort: number): object[] {
  return [
    { id: Z, type: "tab", label: "scraped" },
    {
      id: "mem", type: "cap-config", name: "memory", store: "memory",
      rules: [
        { id: "two", scope: "channel", channel: "sms", max_count: 2, window_seconds: 3600 },
        { id: "trial", scope: "channel", channel: "sms", max_count: 1, window_seconds: 3600, enforcement: "shadow" },
      ],
    },
    { id: "live", type: "cap-config", name: "redis", store: "redis", redisUrl: REDIS_URL, keyPrefix, timeoutMs: 2000, rules: [] },
    {
      id: "gone", type: "cap-config", name: "no redis", store: "redis", redisUrl: `redis://127.0.0.1:${deadPort}`, keyPrefix, failMode: "open",
      rules: [{ id: "five", scope: "channel", channel: "sms", max_count: 5, window_seconds: 3600 }],
    },
    ...route("send", "/send", ["sup"]),
    ...route("suppress", "/suppress", ["sup", "listed"]),
    at({ id: "sup", type: "suppression-gate", config: "mem", wires: [["cap"], ["skipped"]] }),
    at({ id: "cap", type: "frequency-cap-gate", config: "mem", wires: [["sent"], ["skipped"], []] }),
    ...route("paced", "/paced", ["tp"]),
    at({ id: "tp", type: "throughput-gate", config: "live", disposition: "skip", rate: 1, interval: 3600, burst: 1, keyType: "channel", wires: [["sent"], ["skipped"], []] }),
    ...route("down", "/down", ["gcap"]),
    at({ id: "gcap", type: "frequency-cap-gate", config: "gone", wires: [["sent"], ["skipped"], []] }),
    reply("sent", "allowed"),
    reply("skipped", "skipped"),
    reply("listed", "listed"),
    at({ id: "catch", type: "catch", scope: null, wires: [["bad"]] }),
    at({ id: "bad", type: "function", outputs: 1, wires: [["respond"]], func: "msg.payload = { outcome: 'error', reason: msg.error.message };\nmsg.statusCode = 400;\nreturn msg;" }),
    at({ id: "respond", type: "http response", wires: [] }),
  ];
}

/** `gate outcome reason` → msgs, from a query summed by those labels. */
function byGate(samples: VectorSample[]): Record<string, number> {
  return Object.fromEntries(samples.map((s) => [`${s.metric.gate} ${s.metric.outcome} ${s.metric.reason}`, s.value]).sort());
}

/** The lane values the metrics table of docs/observability.md lists for the store-call histogram. */
function documentedLanes(): string[] {
  const row = readFileSync(join(ROOT, "docs", "observability.md"), "utf8").split("\n").find((l) => l.startsWith("| `sendgate_store_call_duration_seconds`"));
  const lanes = /`lane` \(([^)]*)\)/.exec(row ?? "")?.[1] ?? "";
  return [...lanes.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe("metrics scraped by a real Prometheus from a real Node-RED [prometheus]", function () {
  this.timeout(180_000);
  const keyPrefix = uniquePrefix("prom");
  const dir = mkdtempSync(join(tmpdir(), "sendgate-prom-flow-"));
  let red: NodeRedProcess;
  let prom: PrometheusProcess;

  before(async () => {
    const flowFile = join(dir, "flows.json");
    writeFileSync(flowFile, JSON.stringify(flow(keyPrefix, await freePort())));
    red = new NodeRedProcess(flowFile);
    await red.start();
    const target = `127.0.0.1:${red.port}`;
    prom = new PrometheusProcess(["mem", "live", "gone"].map((config) => ({
      job: `sendgate-${config}`, metricsPath: `/frequency-cap/${config}/metrics`, targets: [target],
    })), [ALERTS_FILE]);
    await prom.start();
    await until("every target scraped", () => prom.targets(), (ts) => ts.length === 3 && ts.every((t) => t.health === "up"));
  });

  after(async () => {
    await prom?.stop();
    await red?.stop();
    red?.cleanUp();
    rmSync(dir, { recursive: true, force: true });
    const client = redisClient();
    await dropPrefix(client, keyPrefix);
    client.disconnect();
  });

  async function post(url: string, send: Record<string, unknown>, body: unknown): Promise<string> {
    const res = await fetch(`${red.baseUrl}${url}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ send, body }) });
    const answer = (await res.json()) as { outcome: string; reason?: string };
    return `${answer.outcome} ${answer.reason ?? "none"}`;
  }

  it("counts a known mix of sends exactly, as Prometheus reads them back", async () => {
    // K = 3 opted out, then 4 recipients x 3 sends past a cap of 2: N = 8 allowed, M = 4 capped, and a
    // shadow cap of 1 that would refuse the second of each (4); one bad send goes to Catch
    for (const r of ["o1", "o2", "o3"]) assert.equal(await post("/suppress", { topic: "suppress", recipient: r, channel: "sms" }, ""), "listed none");
    const answers: string[] = [];
    for (const r of ["a1", "a2", "a3", "a4"]) for (const n of [1, 2, 3]) answers.push(await post("/send", { recipient: r, channel: "sms" }, `${r} #${n}`));
    for (const r of ["o1", "o2", "o3"]) answers.push(await post("/send", { recipient: r, channel: "sms" }, "hello"));
    answers.push(await post("/send", { channel: "sms" }, "nobody"));
    // the throughput-gate on Redis passes 1 an hour; the gate on a Redis that is not there fails open
    for (const n of [1, 2, 3]) answers.push(await post("/paced", { recipient: `t${n}`, channel: "sms" }, "paced"));
    for (const n of [1, 2, 3]) answers.push(await post("/down", { recipient: `d${n}`, channel: "sms" }, "down"));
    const tally: Record<string, number> = {};
    for (const a of answers) tally[a.startsWith("error") ? "error" : a] = (tally[a.startsWith("error") ? "error" : a] ?? 0) + 1;
    assert.deepEqual(tally, {
      "allowed none": 9, "skipped frequency_capped": 4, "skipped opted_out": 3, error: 1,
      "skipped throughput_exceeded": 2, "allowed fail_open": 3,
    });

    const mem = await until("the memory cap-config's msgs in Prometheus",
      () => prom.query('sum by (gate, outcome, reason) (sendgate_msgs_total{job="sendgate-mem"})'),
      (v) => v.reduce((sum, s) => sum + s.value, 0) === 28);
    assert.deepEqual(byGate(mem), {
      "cap allowed none": 8, "cap skipped frequency_capped": 4,
      "sup allowed none": 12, "sup error invalid_send": 1, "sup skipped opted_out": 3,
    });
    const shadow = await prom.query('sendgate_shadow_would_refuse_total{job="sendgate-mem"}');
    assert.deepEqual(shadow.map((s) => [s.metric.config, s.metric.gate, s.metric.cap_id, s.metric.org, s.value]), [["mem", "cap", "trial", "*", 4]]);

    const live = await until("the Redis cap-config's msgs", () => prom.query('sum by (gate, outcome, reason) (sendgate_msgs_total{job="sendgate-live"})'),
      (v) => v.reduce((sum, s) => sum + s.value, 0) === 3);
    assert.deepEqual(byGate(live), { "tp allowed none": 1, "tp skipped throughput_exceeded": 2 });
    const gone = await until("the fail-open msgs", () => prom.query('sum by (gate, outcome, reason) (sendgate_msgs_total{job="sendgate-gone"})'),
      (v) => v.reduce((sum, s) => sum + s.value, 0) === 3);
    assert.deepEqual(byGate(gone), { "gcap allowed fail_open": 3 });

    const states = await prom.query("sendgate_store_state == 1");
    assert.deepEqual(states.map((s) => `${s.metric.config} ${s.metric.state}`).sort(), ["gone connecting", "live ready", "mem ready"]);
    const info = await prom.query("sendgate_info");
    assert.deepEqual(info.map((s) => `${s.metric.config} ${s.metric.store} ${s.metric.rules_source} ${s.metric.fail_mode}`).sort(),
      ["gone redis inline open", "live redis inline open", "mem memory inline open"]);
  });

  it("times the throughput-gate's store calls under a lane docs/observability.md names", async () => {
    const lanes = await until("the throughput lane", () => prom.query('sum by (lane, result) (sendgate_store_call_duration_seconds_count{job="sendgate-live"})'),
      (v) => v.some((s) => s.metric.lane === "throughput"));
    const throughput = lanes.filter((s) => s.metric.lane === "throughput");
    assert.deepEqual(throughput.map((s) => s.metric.result), ["ok"]);
    assert.ok((throughput[0]?.value ?? 0) >= 1 && (throughput[0]?.value ?? 0) <= 3, JSON.stringify(throughput));
    const named = documentedLanes();
    assert.deepEqual(lanes.map((s) => s.metric.lane).filter((l) => !named.includes(l)), [], `docs/observability.md lanes: ${named.join(", ")}`);
  });

  it("evaluates every shipped alert rule without error, and raises the ones this mix calls for", async () => {
    const rules = await until("every rule evaluated", () => prom.rules(), (rs) => rs.length > 0 && rs.every((r) => r.evaluated));
    assert.deepEqual(rules.filter((r) => r.health !== "ok").map((r) => `${r.name}: ${r.lastError}`), []);
    const key = (a: AlertState) => `${a.labels.alertname} ${a.labels.config}${a.labels.cap_id ? ` ${a.labels.cap_id}` : ""}`;
    const expected = ["SendgateFailOpen gone", "SendgateShadowCapWouldRefuse mem trial", "SendgateStoreDown gone"];
    const alerts = await until("the alerts", () => prom.alerts(), (as) => expected.every((e) => as.some((a) => key(a) === e)));
    // the breaker of the store that is not there may have opened too; nothing else is wrong
    const others = alerts.map(key).filter((k) => !expected.includes(k) && k !== "SendgateStoreCircuitOpened gone");
    assert.deepEqual(others, []);
  });

  it("runs every dashboard query, variables set to all", async () => {
    const failed: string[] = [];
    for (const { where, expr } of dashboardExprs()) {
      const promql = expr.replace(/\$__rate_interval/g, "1m").replace(/\$(job|config|gate)\b/g, ".*");
      await prom.query(promql).catch((err: Error) => failed.push(`${where}: ${err.message}`));
    }
    assert.deepEqual(failed, []);
    // increase() needs two samples of a series in its window: a scrape a second, but a loaded box may lag a few
    const byOutput = await until("the dashboard's msgs by outcome", () => prom.query('sum by (outcome) (increase(sendgate_msgs_total{job=~".*",config=~".*",gate=~".*"}[1m]))'),
      (v) => v.length > 0);
    assert.ok(byOutput.some((s) => s.metric.outcome === "allowed"), JSON.stringify(byOutput));
  });
});
