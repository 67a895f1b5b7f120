import assert from "node:assert/strict";
import { FailOpenReporter } from "../../src/core/store/failOpenReporter";

describe("core/FailOpenReporter", () => {
  it("counts every fail-open, warns once per org and channel within the quiet time", () => {
    const warned: string[] = [];
    const reporter = new FailOpenReporter((t) => warned.push(t), 60_000);
    for (let i = 0; i < 5; i++) reporter.report("acme", "sms", "timeout");
    reporter.report("acme", "email", "timeout");
    reporter.report("other", "sms", "timeout");
    assert.equal(reporter.count, 7);
    assert.equal(warned.length, 3);
    assert.match(warned[0] ?? "", /org "acme", channel "sms": timeout/);
  });

  it("says how many were not warned about once the quiet time is over", () => {
    const warned: string[] = [];
    const reporter = new FailOpenReporter((t) => warned.push(t), 0);
    reporter.report("acme", "sms", "timeout");
    reporter.report("acme", "sms", "timeout");
    assert.equal(warned.length, 2);
  });
});
