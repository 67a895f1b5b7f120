import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Collector, helper } from "../support/nodeRed";
import { GATE_CASES } from "../support/gateCases";
import { assertJudged, caseFlow, deployCase, LifecycleStore, redeploy, sendRange, settle, Tally, type Deployed, type LifecycleStoreKind } from "../support/lifecycleRun";
import { sleep, uniquePrefix } from "../support/redis";

/**
 * The gate conformance suite: every gate type and mode, on every store, meets
 * the edges of its life (a full deploy, a modified-nodes deploy, a stop and a
 * start of Node-RED, a store that is not there, a store restarted under held
 * msgs) and every msg it took in leaves exactly once or stays held exactly
 * once: 0 lost, 0 twice. A new gate joins by adding a row to GATE_CASES.
 */
const KINDS: readonly LifecycleStoreKind[] = ["memory", "redis", "redis-cluster"];
const BURST = 2_000;
const SMALL = 200;

for (const kind of KINDS) {
  describe(`gate lifecycle on ${kind}: every msg a gate takes in leaves once or stays held once`, function () {
    this.timeout(120_000);
    const store = new LifecycleStore(kind);
    let userDir = "";

    before(async function () {
      this.timeout(60_000);
      await store.start();
      await helper.startServer();
    });
    after(async () => {
      await helper.stopServer();
      await store.stop();
    });
    // a user dir per test: a memory store's counters and held msgs are kept there between deployments, not between tests
    beforeEach(() => {
      userDir = mkdtempSync(join(tmpdir(), "sendgate-lifecycle-"));
      helper.settings({ userDir });
    });
    afterEach(async () => {
      await helper.unload();
      // a store a test killed comes back for the next
      await store.restart().catch(() => undefined);
      helper.settings({ userDir: undefined });
      rmSync(userDir, { recursive: true, force: true });
    });

    for (const gateCase of GATE_CASES) {
      describe(gateCase.name, () => {
        const start = async (tally: Tally, props: Record<string, unknown>, keyPrefix: string, count: number): Promise<Deployed> => {
          const first = await deployCase(gateCase, store, props, { keyPrefix });
          tally.add(first.out);
          if (gateCase.prepare && first.service) await gateCase.prepare(first.service, count);
          return first;
        };

        it(`(a) a burst of ${BURST} in the same tick as a full deploy`, async () => {
          const keyPrefix = uniquePrefix("life-a");
          const props = gateCase.props();
          const tally = new Tally(gateCase);
          const first = await start(tally, props, keyPrefix, BURST);
          sendRange(first, gateCase, 0, BURST);
          await helper.unload();
          const second = await deployCase(gateCase, store, props, { keyPrefix });
          tally.add(second.out);
          await settle(tally, BURST, second);
        });

        it(`(b) a modified-nodes deploy of the gate and the nodes after it, in the same tick as a burst of ${BURST}`, async () => {
          const keyPrefix = uniquePrefix("life-b");
          const props = gateCase.props();
          const tally = new Tally(gateCase);
          const first = await start(tally, props, keyPrefix, BURST);
          sendRange(first, gateCase, 0, BURST);
          await redeploy(caseFlow(gateCase, store, props, { keyPrefix, edition: "b" }), "nodes");
          // the gate and the helpers after its allowed and deferred outputs are new nodes now
          const second = new Collector(["allowed", "deferred"]);
          tally.add(second);
          await settle(tally, BURST, { out: second, service: first.service, send: () => undefined });
        });

        it(`(c) Node-RED stopped and started with msgs held and ${SMALL} in the intake`, async () => {
          const keyPrefix = uniquePrefix("life-c");
          const props = gateCase.props();
          const tally = new Tally(gateCase);
          const first = await start(tally, props, keyPrefix, 2 * SMALL);
          // the first half judged (some held), the second still coming in as Node-RED stops
          sendRange(first, gateCase, 0, SMALL);
          await first.out.until(1, 10_000).catch(() => undefined);
          await sleep(300);
          sendRange(first, gateCase, SMALL, 2 * SMALL);
          await helper.unload();
          await sleep(500);
          const second = await deployCase(gateCase, store, props, { keyPrefix });
          tally.add(second.out);
          await settle(tally, 2 * SMALL, second);
        });

        if (kind === "memory") return;

        it("(d) the store unreachable at deploy, and coming back", async () => {
          const keyPrefix = uniquePrefix("life-d");
          const props = gateCase.props();
          const tally = new Tally(gateCase);
          await store.kill();
          tally.storeFailed = true;
          const first = await deployCase(gateCase, store, props, { keyPrefix });
          tally.add(first.out);
          sendRange(first, gateCase, 0, SMALL);
          await first.out.until(SMALL, 20_000).catch(() => undefined);
          await store.restart();
          await sleep(1_500);
          sendRange(first, gateCase, SMALL, 2 * SMALL);
          assertJudged(await settle(tally, 2 * SMALL, first), SMALL, 2 * SMALL);
        });

        it("(e) the store restarted while msgs are held", async () => {
          const keyPrefix = uniquePrefix("life-e");
          const props = gateCase.props();
          const tally = new Tally(gateCase);
          const first = await start(tally, props, keyPrefix, 3 * SMALL);
          sendRange(first, gateCase, 0, SMALL);
          await sleep(500);
          await store.kill();
          tally.storeFailed = true;
          sendRange(first, gateCase, SMALL, 2 * SMALL);
          await sleep(500);
          await store.restart();
          await sleep(1_500);
          sendRange(first, gateCase, 2 * SMALL, 3 * SMALL);
          assertJudged(await settle(tally, 3 * SMALL, first), 2 * SMALL, 3 * SMALL);
        });
      });
    }
  });
}
