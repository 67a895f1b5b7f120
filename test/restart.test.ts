import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodeRedProcess } from "./support/nodeRedProcess";
import { REDIS_URL, dropPrefix, redisClient, uniquePrefix } from "./support/redis";

function flow(store: "memory" | "redis", keyPrefix: string): object[] {
  return [
    { id: "tab1", type: "tab", label: "restart" },
    { id: "cfg", type: "cap-config", name: "restart test caps", store, redisUrl: REDIS_URL, keyPrefix, rules: [] },
    { id: "in", type: "http in", z: "tab1", x: 100, y: 100, url: "/send", method: "post", wires: [["sup"]] },
    { id: "sup", type: "suppression-gate", z: "tab1", x: 300, y: 100, config: "cfg", httpResponse: true,
      recipient: "payload.recipient", recipientType: "msg", channel: "payload.channel", channelType: "msg", body: "payload.text", bodyType: "msg", wires: [["out"], ["out"]] },
    { id: "out", type: "http response", z: "tab1", x: 500, y: 100, wires: [] },
  ];
}

/** The block list survives a Node-RED restart: in Redis, and in the memory store's file in the user dir. */
for (const store of ["memory", "redis"] as const) {
  describe(`a Node-RED restart keeps the block list (${store} store)`, function () {
    this.timeout(60_000);
    const dir = mkdtempSync(join(tmpdir(), "sendgate-restart-"));
    const keyPrefix = uniquePrefix("restart");
    const flowFile = join(dir, "flows.json");
    writeFileSync(flowFile, JSON.stringify(flow(store, keyPrefix)));
    const red = new NodeRedProcess(flowFile);
    const redis = redisClient();

    after(async () => {
      await red.stop();
      red.cleanUp();
      rmSync(dir, { recursive: true, force: true });
      await dropPrefix(redis, keyPrefix);
      await redis.quit();
    });

    const send = (recipient: string) => fetch(`${red.baseUrl}/send`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ recipient, channel: "sms", text: `hello ${Math.random()}` }),
    });

    it("still skips an opted-out recipient after the process was stopped and started again", async () => {
      await red.start();
      const listed = await fetch(`${red.baseUrl}/frequency-cap/cfg/suppressions`, {
        method: "POST", headers: { "content-type": "application/json" },
        body: JSON.stringify({ recipient: "bob", channel: "sms", reason: "STOP" }),
      });
      assert.equal(listed.status, 201, await listed.text());
      assert.equal((await send("bob")).status, 403);
      await red.stop();
      await red.start();
      const after = await send("bob");
      assert.equal(after.status, 403, red.output);
      assert.equal(((await after.json()) as { error: string }).error, "RECIPIENT_OPTED_OUT");
      assert.equal((await send("alice")).status, 200);
    });
  });
}
