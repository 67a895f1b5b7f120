import assert from "node:assert/strict";
import { StoreUnavailableError } from "../../src/core/errors";
import { CircuitBreaker, StoreGuard } from "../../src/core/store/storeGuard";
import { sleep } from "../support/redis";

async function failureKind(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (err) {
    assert.ok(err instanceof StoreUnavailableError);
    return err.kind;
  }
  assert.fail("expected a failure");
}

describe("core/StoreGuard: timeout and circuit breaker", () => {
  it("times a slow call out after timeoutMs", async () => {
    const guard = new StoreGuard({ timeoutMs: 30 });
    const started = Date.now();
    assert.equal(await failureKind(guard.run(() => sleep(500))), "timeout");
    assert.ok(Date.now() - started < 300);
  });

  it("opens after repeated failures, refuses at once, then lets one probe close it", async () => {
    const guard = new StoreGuard({ timeoutMs: 50, failureThreshold: 2, coolDownMs: 200 });
    let calls = 0;
    const failing = () => { calls++; return Promise.reject(new Error("boom")); };
    assert.equal(await failureKind(guard.run(failing)), "error");
    assert.equal(await failureKind(guard.run(failing)), "error");
    assert.equal(guard.isOpen(), true);
    assert.equal(await failureKind(guard.run(failing)), "circuit_open");
    assert.equal(calls, 2, "an open circuit does not call the store");
    await sleep(250);
    assert.equal(await guard.run(async () => "back"), "back");
    assert.equal(guard.isOpen(), false);
  });

  it("re-opens when the probe fails", async () => {
    const guard = new StoreGuard({ timeoutMs: 50, failureThreshold: 1, coolDownMs: 100 });
    await failureKind(guard.run(() => Promise.reject(new Error("down"))));
    await sleep(120);
    assert.equal(await failureKind(guard.run(() => Promise.reject(new Error("still down")))), "error");
    assert.equal(await failureKind(guard.run(async () => "too soon")), "circuit_open");
  });

  it("says its state (closed, open, half_open) and counts each opening, a failed probe included", async () => {
    const breaker = new CircuitBreaker({ failureThreshold: 2, coolDownMs: 100 });
    const fault = new StoreUnavailableError("timeout", "slow");
    assert.equal(breaker.state(), "closed");
    breaker.settle(breaker.admit(), fault);
    assert.deepEqual([breaker.state(), breaker.opens], ["closed", 0]);
    breaker.settle(breaker.admit(), fault);
    assert.deepEqual([breaker.state(), breaker.opens], ["open", 1]);
    // a call admitted before it opened fails late: the cool-down grows, it is not another opening
    breaker.settle(false, fault);
    assert.equal(breaker.opens, 1);
    await sleep(120);
    assert.equal(breaker.state(), "half_open");
    const probe = breaker.admit();
    assert.equal(breaker.state(), "half_open");
    breaker.settle(probe, fault);
    assert.deepEqual([breaker.state(), breaker.opens], ["open", 2]);
    await sleep(120);
    breaker.settle(breaker.admit());
    assert.deepEqual([breaker.state(), breaker.opens], ["closed", 2]);
    // a msg's own bad input is no store fault
    for (let i = 0; i < 5; i++) breaker.settle(breaker.admit(), new TypeError("bad argument"));
    assert.equal(breaker.state(), "closed");
  });
});
