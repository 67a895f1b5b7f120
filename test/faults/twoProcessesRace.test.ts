import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodeRedProcess } from "../support/nodeRedProcess";
import { REDIS_URL, uniquePrefix } from "../support/redis";
import { OwnRedisCluster } from "../support/redisServer";

/** POST /send {recipient, messageId} → the gate's verdict as JSON: the same flow runs in each process. */
function flow(config: Record<string, unknown>): object[] {
  return [
    { id: "tab1", type: "tab", label: "race" },
    {
      id: "cfg", type: "cap-config", name: "shared caps", timeoutMs: 5000, failMode: "closed", ...config,
      rules: [{ id: "five", scope: "global", max_count: 5, window_seconds: 600 }],
    },
    { id: "in", type: "http in", z: "tab1", x: 100, y: 100, url: "/send", method: "post", wires: [["gate"]] },
    {
      id: "gate", type: "frequency-cap-gate", z: "tab1", x: 300, y: 100, config: "cfg",
      recipient: "payload.recipient", recipientType: "msg", messageId: "payload.messageId", messageIdType: "msg", channel: "sms", channelType: "str",
      wires: [["verdict"], ["verdict"], []],
    },
    {
      id: "verdict", type: "function", z: "tab1", x: 500, y: 100, outputs: 1,
      func: "msg.payload = { status: msg.admission.status, reason: msg.admission.reason || null };\nreturn msg;",
      wires: [["reply"]],
    },
    { id: "reply", type: "http response", z: "tab1", x: 650, y: 100, wires: [] },
    { id: "catch", type: "catch", z: "tab1", x: 300, y: 160, scope: ["gate"], wires: [["failed"]] },
    { id: "failed", type: "function", z: "tab1", x: 500, y: 160, func: "msg.statusCode = 503;\nmsg.payload = { error: msg.error.message };\nreturn msg;", wires: [["reply"]] },
  ];
}

/** 1,000 sends to 10 recipients, split over the processes, 40 requests in flight at once. */
async function race(processes: NodeRedProcess[]): Promise<{ allowed: number; skipped: number; byProcess: number[]; other: string[] }> {
  const byProcess = processes.map(() => 0);
  let allowed = 0;
  let skipped = 0;
  const other: string[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: 40 }, async () => {
    while (next < 1000) {
      const i = next++;
      const at = i % processes.length;
      const res = await fetch(`${processes[at].baseUrl}/send`, {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ recipient: `user-${i % 10}`, messageId: `m${i}` }),
      });
      const body = await res.json() as { status?: string; reason?: string | null; error?: string };
      if (body.status === "allowed" && !body.reason) {
        allowed++;
        byProcess[at] = byProcess[at] + 1;
      } else if (body.status === "skipped") {
        skipped++;
      } else {
        other.push(JSON.stringify(body));
      }
    }
  }));
  return { allowed, skipped, byProcess, other };
}

for (const topology of ["one Redis", "a 3-master Redis Cluster"] as const) {
  describe(`two real Node-RED processes race 1,000 sends to 10 recipients (max 5 each) on ${topology}`, function () {
    this.timeout(120_000);
    const dir = mkdtempSync(join(tmpdir(), "sendgate-race-"));
    const cluster = topology === "one Redis" ? undefined : new OwnRedisCluster();
    let processes: NodeRedProcess[] = [];

    before(async () => {
      await cluster?.start();
      const store = cluster ? { store: "redis-cluster", redisNodes: cluster.seeds } : { store: "redis", redisUrl: REDIS_URL };
      const flowFile = join(dir, "flows.json");
      writeFileSync(flowFile, JSON.stringify(flow({ ...store, keyPrefix: uniquePrefix("race") })));
      processes = [new NodeRedProcess(flowFile), new NodeRedProcess(flowFile)];
      await Promise.all(processes.map((p) => p.start()));
    });

    after(async () => {
      await Promise.all(processes.map((p) => p.stop()));
      processes.forEach((p) => p.cleanUp());
      await cluster?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("admits exactly 50 between them", async () => {
      const result = await race(processes);
      console.log(`      two Node-RED processes on ${topology}: 1000 sends, allowed ${result.allowed} (${result.byProcess.join(" + ")}), skipped ${result.skipped}, no verdict ${result.other.length}`);
      assert.deepEqual(result.other, [], "every send got a verdict from the store");
      assert.equal(result.allowed, 50);
      assert.equal(result.skipped, 950);
      assert.ok(result.byProcess.every((n) => n > 0), `both processes admitted some: ${result.byProcess.join(", ")}`);
    });
  });
}
