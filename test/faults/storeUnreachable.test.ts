import assert from "node:assert/strict";
import type { Node, NodeMessage } from "node-red";
import { flowNode, gateNodes, helper, reasonOf, TAB, type Msg } from "../support/nodeRed";
import throughputGate from "../../src/nodes/throughputGate";
import { sleep, uniquePrefix } from "../support/redis";
import { freePort } from "../support/ports";
import { OwnRedis, OwnRedisCluster } from "../support/redisServer";
import { RedisStore } from "../../src/redis/redisStore";
import { LoopStalls } from "../support/loopStalls";

/**
 * SPEC §9: "An unreachable store: the first verdict within 1.5 s, the next
 * ones at once while the breaker is open, real verdicts within 1 s of its
 * return." Every gate that calls the store (suppression, frequency cap,
 * throughput: one send queue and one breaker) gets a msg every ROUND_MS while
 * the store is gone and after it is back, with the default timeoutMs (50).
 */
const ROUND_MS = 200;
/** the store stays away this long: the breaker opens, cools down and probes twice */
const OUTAGE_MS = 3000;
/** msgs keep coming this long after the store is back */
const AFTER_MS = 2500;
/** the first verdict of an outage (SPEC §9) */
const FIRST_VERDICT_MS = 1500;
/**
 * "at once": each later msg leaves this soon after it came (or after the
 * first verdict, when it came before it), not counting the time this
 * process's event loop stood still meanwhile (LoopStalls: a GC pause of a
 * suite's worth of heap, a loaded box). Its verdict is a refusal made
 * without a round trip; the margin is the test helper's.
 */
const AT_ONCE_MS = 100;
/** real verdicts again this soon after the store is back (SPEC §9) */
const RECOVERY_MS = 1000;

const GATES = ["sup", "cap", "tp"] as const;
const OUTPUTS = ["passed", "skipped", "deferred", "caught"];

/** A store the test starts, kills (kill -9) and brings back on the same ports. */
interface Server {
  /** cap-config fields that put it on this store */
  config(): Record<string, unknown>;
  /** picks its ports (nothing started) */
  reserve(): Promise<void>;
  start(): Promise<void>;
  kill(): Promise<void>;
  /** started again on the same ports, resolving when it is usable */
  revive(): Promise<void>;
  /** hung (SIGSTOP): connections open, nothing answered */
  pause(): void;
  resume(): void;
  cleanUp(): Promise<void>;
}

function oneRedis(): Server {
  let own: OwnRedis | undefined;
  const server = (): OwnRedis => own as OwnRedis;
  return {
    config: () => ({ store: "redis", redisUrl: server().url }),
    reserve: async () => { own = new OwnRedis(await freePort()); },
    start: () => server().start(),
    kill: () => server().stop(),
    revive: () => server().start(),
    pause: () => server().pause(),
    resume: () => server().resume(),
    cleanUp: async () => {
      await own?.stop();
      own?.cleanUp();
    },
  };
}

function cluster(): Server {
  const own = new OwnRedisCluster();
  return {
    config: () => ({ store: "redis-cluster", redisNodes: own.seeds }),
    reserve: async () => { await own.reserve(); },
    start: () => own.start(),
    kill: () => own.kill(),
    revive: () => own.revive(),
    pause: () => own.pause(),
    resume: () => own.resume(),
    cleanUp: () => own.stop(),
  };
}

interface Left {
  id: string;
  msg: Msg;
  /** performance.now() when it reached a helper */
  at: number;
}

/** cap-config + the three gates that call the store, side by side: what passes goes to `passed`, Catch to `caught`. */
async function deploy(server: Server, failMode: "open" | "closed"): Promise<{ left: Left[]; send(gate: string, n: number): void; sentAt: Map<string, number> }> {
  await helper.load([...gateNodes, throughputGate], [
    TAB,
    {
      id: "cfg", type: "cap-config", ...server.config(), keyPrefix: uniquePrefix(`unreachable-${failMode}`), failMode,
      rules: [{ id: "roomy", scope: "global", max_count: 1000, window_seconds: 600 }],
    },
    flowNode({ id: "sup", type: "suppression-gate", config: "cfg", wires: [["passed"], ["skipped"]] }),
    flowNode({ id: "cap", type: "frequency-cap-gate", config: "cfg", wires: [["passed"], ["skipped"], ["deferred"]] }),
    flowNode({ id: "tp", type: "throughput-gate", config: "cfg", rate: 10_000, burst: 10_000, disposition: "skip", wires: [["passed"], ["skipped"], ["deferred"]] }),
    ...OUTPUTS.map((id) => flowNode({ id, type: "helper" })),
    flowNode({ id: "catch", type: "catch", scope: null, wires: [["caught"]] }),
  ]);
  const left: Left[] = [];
  for (const id of OUTPUTS) (helper.getNode(id) as Node).on("input", (msg: NodeMessage) => left.push({ id, msg: msg as Msg, at: performance.now() }));
  const sentAt = new Map<string, number>();
  return {
    left, sentAt,
    send: (gate, n) => {
      const messageId = `${gate}-${n}`;
      sentAt.set(messageId, performance.now());
      (helper.getNode(gate) as Node).receive({ recipient: `r-${messageId}`, channel: "sms", messageId, payload: { n } } as NodeMessage);
    },
  };
}

/** A store call's failure, as the fail mode shows it: fail_open on the way out, or the msg in Catch. */
function failed(l: Left): boolean {
  return l.id === "caught" || reasonOf(l.msg) === "fail_open";
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe("an unreachable store (SPEC §9): the first verdict within 1.5 s, the next at once, real verdicts within 1 s of its return", function () {
  this.timeout(90_000);
  before(() => helper.startServer());
  after(() => helper.stopServer());
  afterEach(() => helper.unload());

  for (const [store, make] of [["redis", oneRedis], ["redis-cluster", cluster]] as const) {
    for (const failMode of ["open", "closed"] as const) {
      for (const when of ["never connected", "went away", "stalled"] as const) {
        it(`${store}, fail ${failMode}, ${when}: suppression, frequency cap and throughput`, async () => {
          const server = make();
          const stalls = new LoopStalls();
          try {
            await server.reserve();
            if (when !== "never connected") await server.start();
            const flow = await deploy(server, failMode);
            let n = 0;
            if (when !== "never connected") {
              // the store works: each gate's msg gets its real verdict, then the store is killed (or hangs)
              for (const gate of GATES) flow.send(gate, n);
              n++;
              await until(() => flow.left.length === GATES.length, 10_000, "the verdicts before the outage");
              assert.deepEqual(flow.left.map((l) => [l.id, reasonOf(l.msg)]), GATES.map(() => ["passed", undefined]), "real verdicts before the outage");
              if (when === "went away") await server.kill();
              else server.pause();
            }
            const firstOfOutage = n;
            const downAt = performance.now();
            let restartAt = Infinity;
            let back = Infinity;
            let reviving: Promise<void> | undefined;
            while (back === Infinity || performance.now() < back + AFTER_MS) {
              for (const gate of GATES) flow.send(gate, n);
              n++;
              if (!reviving && performance.now() >= downAt + OUTAGE_MS) {
                restartAt = performance.now();
                if (when === "stalled") server.resume();
                reviving = (when === "never connected" ? server.start() : when === "went away" ? server.revive() : Promise.resolve()).then(() => { back = performance.now(); });
              }
              await sleep(ROUND_MS);
            }
            await reviving;
            const sent = n * GATES.length;
            await until(() => flow.left.length >= sent, 10_000, `${sent} msgs to leave (${flow.left.length} left)`);
            await sleep(100);

            const ids = flow.left.map((l) => String(l.msg.messageId));
            assert.equal(ids.length, sent, "each msg left once");
            assert.equal(new Set(ids).size, sent, "none twice");
            const sentAt = (l: Left): number => flow.sentAt.get(String(l.msg.messageId)) as number;
            const round = (l: Left): number => Number(String(l.msg.messageId).split("-")[1]);

            // the outage: msgs that left before the store was started again
            const outage = flow.left.filter((l) => round(l) >= firstOfOutage && l.at < restartAt);
            const firstVerdictAt = Math.min(...outage.map((l) => l.at));
            const firstWait = Math.max(...outage.filter((l) => round(l) === firstOfOutage).map((l) => l.at - sentAt(l)));
            // each later msg from when it came, or from the first verdict when it came before it, less the loop's stalls
            const laterWaits = outage.filter((l) => round(l) > firstOfOutage).map((l) => {
              const from = Math.max(sentAt(l), firstVerdictAt);
              return l.at - from - stalls.within(from, l.at);
            });
            const slowest = Math.max(...laterWaits);
            const recovering = flow.left.filter((l) => sentAt(l) >= back);
            const lastFailure = recovering.filter(failed).map(sentAt).reduce((a, b) => Math.max(a, b), back);
            console.log(`      ${store} fail ${failMode} ${when}: first verdict ${Math.round(firstWait)} ms, later ones within ${Math.round(slowest)} ms` +
              ` (${laterWaits.filter((ms) => ms > AT_ONCE_MS).length} of ${laterWaits.length} over ${AT_ONCE_MS} ms), last failure sent ${Math.round(lastFailure - back)} ms after the store was back` +
              `; the loop stood still ${Math.round(stalls.within(downAt, restartAt))} ms of the outage`);

            assert.ok(firstWait <= FIRST_VERDICT_MS, `the first msg of the outage waited ${Math.round(firstWait)} ms`);
            assert.ok(slowest <= AT_ONCE_MS, `later msgs waited up to ${Math.round(slowest)} ms: ${laterWaits.map(Math.round).join(", ")}`);
            assert.ok(outage.length >= GATES.length * 10, `${outage.length} msgs left during the outage`);
            for (const l of outage) {
              assert.ok(failed(l), `${String(l.msg.messageId)} left by ${l.id} (${String(reasonOf(l.msg))}) while the store was away`);
              if (failMode === "open") assert.equal(l.id, "passed");
              else {
                assert.equal(l.msg.admission, undefined, "intact: no verdict written");
                assert.deepEqual(l.msg.payload, { n: round(l) }, "intact: payload as sent");
              }
            }
            // real verdicts again, without a redeploy: every msg sent RECOVERY_MS after the store was back was judged by it
            const late = flow.left.filter((l) => sentAt(l) >= back + RECOVERY_MS);
            assert.ok(late.length >= GATES.length * 5, `${late.length} msgs sent after recovery`);
            const stillFailing = late.filter(failed);
            assert.equal(stillFailing.length, 0, `${stillFailing.length} msgs sent ≥ ${RECOVERY_MS} ms after the store was back still failed`);
            for (const l of late) assert.equal(l.id, "passed");
          } finally {
            stalls.stop();
            await helper.unload();
            await server.cleanUp();
          }
        });
      }
    }
  }
});

describe("reconnecting to a store that was away a long while", () => {
  it("tries one Redis and a cluster again at most 250 ms apart, however many attempts failed before", async () => {
    for (const options of [{ url: `redis://127.0.0.1:${await freePort()}` }, { clusterNodes: [`127.0.0.1:${await freePort()}`] }]) {
      const store = new RedisStore(options);
      const client = store.client as unknown as { options: { retryStrategy?: (n: number) => number; clusterRetryStrategy?: (n: number) => number } };
      const delay = client.options.clusterRetryStrategy ?? client.options.retryStrategy;
      assert.ok(delay, `${store.kind}: a reconnect strategy`);
      const delays = Array.from({ length: 200 }, (_, i) => delay(i + 1));
      assert.ok(Math.max(...delays) <= 250, `${store.kind}: attempts up to ${Math.max(...delays)} ms apart`);
      await store.close();
    }
  });
});
