import assert from "node:assert/strict";
import type Redis from "ioredis";
import quietHoursGate from "../../src/nodes/quietHoursGate";
import { capCounterKey, recipientToken } from "../../src/core/caps/keys";
import { MIN_HISTORY_TTL_MS } from "../../src/core/history/decisionHistory";
import type { CapConfigNode } from "../../src/nodes/gate/capConfigNode";
import { storeFields } from "../support/chainFlow";
import { Collector, flowNode, gateNodes, helper, TAB } from "../support/nodeRed";
import { STORE_KINDS, SuiteStore } from "../support/suiteStore";
import { apiSuiteHooks } from "../support/apiSuite";

interface HistoryBody {
  org: string;
  recipient: string;
  size: number;
  enabled: boolean;
  entries: { at: string; gate: string; gate_type: string; gate_name?: string; outcome: string; reason?: string; cap_ids?: string[]; cap_ids_left_out?: number; retry_after_seconds?: number | null }[];
}

const SECRET = "history-api-pepper";
const ALICE = "alice@example.com";
const DAVE = "dave@example.com";
const BOB = "bob@example.com";
const CAROL = "carol@example.com";
/** recipients that send beside the ones looked at: the burst spreads over every master of a cluster */
const CROWD = Array.from({ length: 60 }, (_, i) => `crowd-${i}@example.com`);

async function history(recipient: string, config = "cfg"): Promise<HistoryBody> {
  const res = await helper.request().get(`/frequency-cap/${config}/history`).query({ recipient });
  assert.equal(res.status, 200, res.text);
  return res.body as HistoryBody;
}

/** How many entries have each `gate/outcome/reason/caps`. */
function tally(body: HistoryBody): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const e of body.entries) {
    const name = `${e.gate}/${e.outcome}/${e.reason ?? ""}/${(e.cap_ids ?? []).join("+")}`;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}

for (const kind of STORE_KINDS) {
  describe(`decision history (GET …/history, ${kind} store)`, function () {
    this.timeout(90_000);
    const store = new SuiteStore(kind);
    store.hooks();
    const prefix = apiSuiteHooks(store, "hist");

    /**
     * suppression "supp" → frequency-cap-gate "cap" → quiet-hours-gate "quiet" (its window far from now), and a
     * frequency-cap-gate "checker" in check mode on its own. Caps: 2 an hour per channel (skip), 1 promo an hour (defer).
     */
    async function deploy(config: Record<string, unknown> = {}, credentials: Record<string, string> = {}): Promise<Collector> {
      const now = new Date();
      const far = (h: number) => `${String((now.getUTCHours() + h) % 24).padStart(2, "0")}:00`;
      await helper.load([...gateNodes, quietHoursGate], [
        TAB,
        {
          id: "cfg", type: "cap-config", ...storeFields(store), keyPrefix: prefix(), timeoutMs: 5000, ...config,
          rules: [
            { id: "hourly", scope: "channel", channel: "sms", max_count: 2, window_seconds: 3600 },
            { id: "promo", scope: "channel", channel: "sms", applies_to_categories: ["promo"], max_count: 1, window_seconds: 3600, disposition: "defer" },
          ],
        },
        flowNode({ id: "supp", type: "suppression-gate", name: "opt-outs", config: "cfg", wires: [["cap"], ["skipped"]] }),
        flowNode({ id: "cap", type: "frequency-cap-gate", config: "cfg", deferMax: 86400, wires: [["quiet"], ["skipped"], ["deferred"]] }),
        flowNode({ id: "quiet", type: "quiet-hours-gate", config: "cfg", timezone: "UTC", start: far(3), end: far(5), wires: [["allowed"], ["skipped"], ["deferred"]] }),
        flowNode({ id: "checker", type: "frequency-cap-gate", config: "cfg", mode: "check", wires: [["allowed"], ["skipped"], ["deferred"]] }),
        flowNode({ id: "allowed", type: "helper" }), flowNode({ id: "skipped", type: "helper" }), flowNode({ id: "deferred", type: "helper" }),
      ], Object.keys(credentials).length > 0 ? { cfg: credentials } : {});
      return new Collector(["allowed", "skipped", "deferred"]);
    }

    /** Runs `check` on alice's counter hash on the Redis master that holds it (on a cluster, only that one lists it); nothing on memory. */
    async function onAlicesHash(check: (client: Redis, key: string) => Promise<void>): Promise<void> {
      let checked = 0;
      const key = capCounterKey(prefix(), "default", ALICE);
      for (const { client } of store.masters()) {
        try {
          const [, found] = await client.scan("0", "MATCH", key.replace(/[[\]{}*?\\]/g, (c) => `\\${c}`), "COUNT", 100_000);
          if (found.length === 0) continue;
          await check(client, key);
          checked++;
        } finally {
          await client.quit();
        }
      }
      assert.equal(checked, kind === "memory" ? 0 : 1, "the hash found on its master");
    }

    /** One tick's burst: 5 sms each to alice and the crowd, 2 promos to dave, 1 to bob (opted out); 3 checks for carol. */
    async function burst(out: Collector): Promise<void> {
      const optOut = await helper.request().post("/frequency-cap/cfg/suppressions").send({ recipient: BOB, channel: "sms" });
      assert.equal(optOut.status, 201, optOut.text);
      const supp = helper.getNode("supp");
      const checker = helper.getNode("checker");
      assert.ok(supp && checker);
      for (let k = 0; k < 5; k++) {
        for (const recipient of [ALICE, ...CROWD]) supp.receive({ recipient, channel: "sms", messageId: `${recipient}-${k}`, payload: { secret: `body ${k}` } } as never);
      }
      for (let k = 0; k < 2; k++) supp.receive({ recipient: DAVE, channel: "sms", category: "promo", messageId: `dave-${k}`, payload: `promo ${k}` } as never);
      supp.receive({ recipient: BOB, channel: "sms", messageId: "bob-0" } as never);
      for (let k = 0; k < 3; k++) checker.receive({ recipient: CAROL, channel: "sms", messageId: `carol-${k}` } as never);
      // alice and the crowd: 2 allowed, 3 skipped each; dave 1 allowed (1 held); bob skipped; carol's 3 checks allowed
      await out.until(61 * 5 + 1 + 1 + 3, 30_000);
    }

    it("answers a recipient's verdicts at every gate, newest first, after a burst; a check is no verdict", async () => {
      const out = await deploy({ historySize: 20 });
      await burst(out);
      const alice = await history(ALICE);
      assert.equal(alice.enabled, true);
      assert.equal(alice.size, 20);
      assert.deepEqual(tally(alice), {
        "supp/allowed//": 5,
        "cap/allowed//hourly": 2,
        "cap/skipped/frequency_capped/hourly": 3,
        "quiet/allowed//": 2,
      });
      const times = alice.entries.map((e) => Date.parse(e.at));
      assert.deepEqual(times, [...times].sort((a, b) => b - a), "newest first");
      for (const e of alice.entries.filter((x) => x.outcome === "skipped")) assert.ok(typeof e.retry_after_seconds === "number" && e.retry_after_seconds >= 1, JSON.stringify(e));
      assert.equal(alice.entries.find((e) => e.gate === "supp")?.gate_name, "opt-outs");
      assert.equal(alice.entries.find((e) => e.gate === "cap")?.gate_type, "frequency-cap-gate");
      assert.deepEqual(tally(await history(DAVE)), {
        "supp/allowed//": 2,
        "cap/allowed//hourly+promo": 1,
        "cap/deferred/frequency_capped/promo": 1,
        "quiet/allowed//": 1,
      });
      assert.deepEqual(tally(await history(BOB)), { "supp/skipped/opted_out/": 1 });
      assert.deepEqual((await history(CAROL)).entries, [], "check mode writes no verdicts");
      // the cap gate's 123 allowed verdicts went in with their claims: the rest were written apart, once each
      // (suppression 61 × 5 + 2 + 1, the cap's 61 × 3 refusals and dave's hold, quiet-hours 61 × 2 + 1)
      const service = (helper.getNode("cfg") as unknown as CapConfigNode).service;
      assert.equal(service?.history.written, 308 + 184 + 123);
      // every crowd member's history was written too
      for (const recipient of CROWD.slice(0, 5)) assert.equal((await history(recipient)).entries.length, 12, recipient);
    });

    it("keeps the last historySize verdicts per recipient, for at least a day", async () => {
      const out = await deploy({ historySize: 3 });
      await burst(out);
      const alice = await history(ALICE);
      assert.equal(alice.entries.length, 3);
      await onAlicesHash(async (client, key) => {
        // the counter hash lives at least the history's lifetime (renewed to 1.5 of it), its history in one field
        const ttl = await client.pttl(key);
        assert.ok(ttl > MIN_HISTORY_TTL_MS && ttl <= 1.5 * MIN_HISTORY_TTL_MS, `ttl ${ttl}`);
        // a ring of 3 slots beside the counters, and the slot the next goes in
        const ring = await client.hmget(key, "|h", "|h0", "|h1", "|h2", "|h3");
        assert.deepEqual(ring.map((v) => v !== null), [true, true, true, true, false], JSON.stringify(ring));
        assert.ok(ring.every((v) => v === null || v.length <= 64), "each entry fits a small hash's value");
      });
    });

    it("under hashRecipients keeps it by the recipient's HMAC: no address in any key or entry", async () => {
      const out = await deploy({ historySize: 20, hashRecipients: true }, { hmacSecret: SECRET });
      await burst(out);
      assert.equal((await history(ALICE)).entries.length, 12, "read by the address, kept by its HMAC");
      const service = (helper.getNode("cfg") as unknown as CapConfigNode).service;
      assert.ok(service);
      assert.deepEqual(await service.store.readHistory(capCounterKey(prefix(), "default", ALICE), 20), [], "nothing under the address");
      assert.equal((await service.store.readHistory(capCounterKey(prefix(), "default", recipientToken(ALICE, SECRET)), 20)).length, 12);
      let lists = 0;
      for (const { client } of store.masters()) {
        try {
          const keys: string[] = [];
          let cursor = "0";
          do {
            const [next, found] = await client.scan(cursor, "MATCH", `${prefix()}:*`, "COUNT", 1000);
            cursor = next;
            keys.push(...found);
          } while (cursor !== "0");
          for (const key of keys) {
            assert.doesNotMatch(key, /example\.com|example%2ecom|alice/, key);
            if (!key.endsWith(":c")) continue;
            const fields = await client.hgetall(key);
            const kept = Object.entries(fields).filter(([field]) => /^\|h\d+$/.test(field)).map(([, entry]) => entry);
            if (kept.length === 0) continue;
            lists++;
            for (const entry of kept) assert.doesNotMatch(entry, /example|alice|body|secret/, entry);
          }
        } finally {
          await client.quit();
        }
      }
      if (kind !== "memory") assert.equal(lists, 1 + CROWD.length + 2, "a history in the counter hash of every recipient judged by a gate");
    });

    it("keeps each entry within a small hash's 64-byte values: a long gate id as its tag, caps past the room counted", async () => {
      // ids as a generated flow may have them: the gate's 40 chars, four caps of 30 a claim takes slots in
      const gate = "campaign-gate-for-the-spring-sale-2027-x";
      const capIds = ["per-recipient-daily-limit-sms", "per-recipient-weekly-limit-sms", "per-recipient-monthly-limit-sm", "per-recipient-yearly-limit-sms"];
      await helper.load(gateNodes, [
        TAB,
        {
          id: "cfg", type: "cap-config", ...storeFields(store), keyPrefix: prefix(), timeoutMs: 5000, historySize: 5,
          rules: capIds.map((id, i) => ({ id, scope: "channel", channel: "sms", max_count: 2 + i, window_seconds: 3600 * (i + 1) })),
        },
        flowNode({ id: gate, type: "frequency-cap-gate", name: "spring sale", config: "cfg", wires: [["allowed"], ["skipped"], ["deferred"]] }),
        flowNode({ id: "allowed", type: "helper" }), flowNode({ id: "skipped", type: "helper" }), flowNode({ id: "deferred", type: "helper" }),
      ]);
      const out = new Collector(["allowed", "skipped", "deferred"]);
      const gateNode = helper.getNode(gate);
      assert.ok(gateNode);
      for (let k = 0; k < 4; k++) gateNode.receive({ recipient: ALICE, channel: "sms", messageId: `long-${k}` } as never);
      await out.until(4, 30_000);
      const alice = await history(ALICE);
      assert.deepEqual(alice.entries.map((e) => e.outcome).sort(), ["allowed", "allowed", "skipped", "skipped"]);
      for (const e of alice.entries) {
        assert.equal(e.gate, gate, "the tag read back as the deployed gate's id");
        assert.equal(e.gate_name, "spring sale");
        const listed = e.cap_ids ?? [];
        if (e.outcome === "allowed") {
          assert.ok(listed.length < capIds.length && listed.length + (e.cap_ids_left_out ?? 0) === capIds.length, JSON.stringify(e));
          assert.deepEqual(listed, capIds.slice(0, listed.length), "the first caps, whole");
        } else {
          assert.deepEqual(listed, [capIds[0]], "the cap that refused it");
        }
      }
      const service = (helper.getNode("cfg") as unknown as CapConfigNode).service;
      const stored = await service?.store.readHistory(capCounterKey(prefix(), "default", ALICE), 5);
      assert.equal(stored?.length, 4);
      for (const entry of stored ?? []) assert.ok(entry.length <= 64, `${entry.length} bytes: ${entry}`);
      await onAlicesHash(async (client, key) => {
        assert.equal(await client.object("ENCODING", key), "listpack", "the recipient's hash stays small");
      });
    });

    it("historySize 0 keeps none and says so", async () => {
      const out = await deploy({ historySize: 0 });
      await burst(out);
      const alice = await history(ALICE);
      assert.equal(alice.enabled, false);
      assert.deepEqual(alice.entries, []);
      const service = (helper.getNode("cfg") as unknown as CapConfigNode).service;
      assert.deepEqual(await service?.store.readHistory(capCounterKey(prefix(), "default", ALICE), 20), []);
    });

    it("answers 400 naming the field without a recipient, 404 for an unknown cap-config", async () => {
      await deploy();
      const missing = await helper.request().get("/frequency-cap/cfg/history");
      assert.equal(missing.status, 400);
      assert.match((missing.body as { error: string }).error, /^recipient: /);
      assert.equal((await helper.request().get("/frequency-cap/nope/history").query({ recipient: ALICE })).status, 404);
    });
  });
}
