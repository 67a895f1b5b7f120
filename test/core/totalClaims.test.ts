import assert from "node:assert/strict";
import { capAdmission } from "../../src/core/admission";
import { StoreUnavailableError } from "../../src/core/errors";
import { parseSend } from "../../src/core/send";
import type { ClaimOutcome, ClaimRequest, Settled } from "../../src/core/store/admissionStore";
import { createCapService } from "../../src/service/createCapService";

const RULES = [
  { id: "ad-total", scope: "global", counts: "total", per: ["ad_id"], max_count: 10, window_seconds: 1, window_type: "lifetime" },
  { id: "one-each", scope: "global", max_count: 1, window_seconds: 600 },
];

describe("a total cap's slot on a send whose recipient counter failed open", () => {
  it("stays on msg.admission.claims, so a later refusal gives it back", async () => {
    const service = createCapService({ store: "memory", failMode: "open", rules: RULES }, {}, { warn: () => undefined, error: () => undefined });
    try {
      // the recipient's counter fails (the only store call of this kind a real store would not fail alone): the total's call goes through
      const store = service.store as unknown as { claim(requests: readonly ClaimRequest[]): Promise<Settled<ClaimOutcome>[]> };
      store.claim = async (requests) => requests.map(() => new StoreUnavailableError("error", "injected failure of the recipient's counter"));
      const send = parseSend({ recipient: "alice", channel: "sms", messageId: "m1", attributes: { ad_id: "ad-1" } }, service.sendRules);
      const decision = await service.engine.claim(send);
      assert.equal(decision.kind, "fail_open");
      const admission = capAdmission(decision, undefined, { gate: "gate", configId: "cfg", storeKind: "memory", channel: "sms", now: new Date() });
      // the recipient's call failed after it was sent (an error, as a lost connection): its claim may have landed, so it is on the msg too
      assert.deepEqual(admission.claims.map((c) => [c.kind, c.kind === "dup" ? "" : c.cap_ids.join()]).sort(), [["cap", "one-each"], ["total", "ad-total"]]);
      const usage = async (): Promise<number | undefined> => (await service.engine.usage(send)).find((u) => u.cap_id === "ad-total")?.count;
      assert.equal(await usage(), 1, "the msg left, so its slot is spent");
      const { given } = await service.release(admission.claims, { recipient: "alice" });
      assert.equal(given, 1);
      assert.equal(await usage(), 0);
    } finally {
      await service.close();
    }
  });
});
