import assert from "node:assert/strict";
import { capCounterKey, recipientHashTag } from "../../src/core/caps/keys";
import { gcraLimit, gcraRefund, gcraStep, refundable } from "../../src/core/throughput/gcra";
import { RateMeter } from "../../src/core/throughput/rateMeter";
import { ceilingKey, ceilingLabel, type CeilingScope } from "../../src/core/throughput/throughputKeys";

describe("throughput core", () => {
  it("turns rate, interval and burst into whole-µs T and τ, and names a bad setting", () => {
    assert.deepEqual(gcraLimit(10, 1, 10), { emissionUs: 100_000, toleranceUs: 900_000 });
    assert.deepEqual(gcraLimit(3, 1, 1), { emissionUs: 333_334, toleranceUs: 0 }, "rounded up: never over the ceiling");
    assert.deepEqual(gcraLimit(3000, 60, 1), { emissionUs: 20_000, toleranceUs: 0 });
    assert.throws(() => gcraLimit(0, 1, 1), /^RangeError: rate:/);
    assert.throws(() => gcraLimit(10, -1, 1), /^RangeError: interval:/);
    assert.throws(() => gcraLimit(10, 1, 1.5), /^RangeError: burst:/);
  });

  it("lets a burst through, then one per T; a refusal leaves the TAT alone", () => {
    const limit = gcraLimit(10, 1, 2);
    let tat: number | undefined;
    const at = (now: number, maxWait = 0) => {
      const step = gcraStep(tat, now, limit, maxWait);
      if (step.allowed) tat = step.tat;
      return [step.allowed, step.waitUs];
    };
    assert.deepEqual([at(0), at(0), at(0)], [[true, 0], [true, 0], [false, 100_000]]);
    assert.deepEqual(at(100_000), [true, 0]);
    assert.deepEqual(at(100_000, 250_000), [true, 100_000], "queue: reserves the next instant");
    assert.deepEqual(at(100_000, 50_000), [false, 200_000]);
    assert.deepEqual(at(10_000_000), [true, 0], "an old TAT means nothing");
  });

  it("gives back only the dropped reservations at the tail, and nothing under a later one", () => {
    const T = 100_000;
    assert.deepEqual(refundable([300_000, 100_000, 200_000], T), { count: 3, lastUs: 300_000 });
    assert.deepEqual(refundable([500_000, 400_000, 200_000], T), { count: 2, lastUs: 500_000 }, "300,000 is another msg's: the chain stops there");
    assert.deepEqual(refundable([Number.NaN, 700_000], T), { count: 1, lastUs: 700_000 }, "a held msg that kept no instant gives back nothing");
    assert.equal(refundable([], T), undefined);
    const limit = gcraLimit(10, 1, 1);
    // dropped: the reservations at 400 ms and 500 ms; the TAT they left is 600 ms
    assert.equal(gcraRefund(600_000, 0, limit, 2, 500_000), 400_000);
    assert.equal(gcraRefund(700_000, 0, limit, 2, 500_000), 700_000, "a reservation at 600 ms came after: nothing given back");
    assert.equal(gcraRefund(600_000, 550_000, limit, 2, 500_000), 550_000, "never before now");
  });

  it("gives every ceiling its own key and hash tag, never a recipient's", () => {
    const scopes: [string, CeilingScope][] = [
      ["acme", { kind: "org" }], ["acme", { kind: "channel", channel: "sms" }], ["acme", { kind: "key", value: "sms" }],
      ["acme", { kind: "key", value: "a|b" }], ["acme|a", { kind: "key", value: "b" }], ["acme", { kind: "key", value: "o" }],
      ["acme", { kind: "key", value: "}{:" }], ["__proto__", { kind: "org" }],
    ];
    const keys = scopes.map(([org, scope]) => ceilingKey("fc", org, scope));
    assert.equal(new Set(keys).size, keys.length);
    for (const key of keys) {
      const tag = /\{([^}]*)\}/.exec(key)?.[1] ?? "";
      assert.equal(key.indexOf("{"), key.lastIndexOf("{"), `${key}: one hash tag`);
      assert.ok(tag.split("|").length >= 3, `${key}: not a recipient's two-part tag`);
    }
    assert.ok(!keys.includes(capCounterKey("fc", "acme", "t|o")));
    assert.notEqual(`{${/\{([^}]*)\}/.exec(keys[0])?.[1]}}`, recipientHashTag("acme", "t|o"));
    assert.deepEqual(scopes.slice(0, 3).map(([org, scope]) => ceilingLabel(org, scope)), ["acme", "acme/sms", "acme/sms"]);
  });

  it("counts the rate over the last second", () => {
    let now = 0;
    const meter = new RateMeter(() => now);
    meter.add(5);
    now = 500;
    meter.add(5);
    assert.equal(meter.perSecond(), 10);
    now = 1050;
    assert.equal(meter.perSecond(), 5);
    now = 5000;
    assert.equal(meter.perSecond(), 0);
  });
});
