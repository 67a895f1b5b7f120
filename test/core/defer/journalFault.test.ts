import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryDeferStore } from "../../../src/core/hold/memoryHeldQueues";

interface ChildReport {
  answers: { call: string; ok: boolean; detail: unknown }[];
  warnings: string[];
  faultWarnings: number;
  size: number;
}

/** Runs the child under a file size limit of `kb` KB: a write past it fails (EFBIG), as on a full disk. */
function underSizeLimit(kb: number, file: string): Promise<ChildReport> {
  const child = join(__dirname, "..", "..", "support", "journalFaultChild.js");
  return new Promise((resolve, reject) => {
    execFile("bash", ["-c", `ulimit -f ${kb} && exec "$0" "$1" "$2"`, process.execPath, child, file], { timeout: 20_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as ChildReport);
    });
  });
}

describe("memory defer store: a journal that cannot be written (a full disk)", function () {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "sgjournal-fault-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("fails no call, holds and releases each msg once, warns once, and is written whole again once it fits", async () => {
    const file = join(dir, "memory-defer-cfg.jsonl");
    const report = await underSizeLimit(8, file);

    // a throw here would send a msg the queue holds to Catch, and the queue would release it too
    assert.deepEqual(report.answers.map((a) => [a.call, a.ok]), [
      ["hold a", true], ["hold b", true], ["hold big", true], ["hold d", true], ["take", true], ["ack", true],
      ["hold burst", true], ["take burst", true], ["ack burst", true], ["hold e", true],
    ], JSON.stringify(report.answers.map((a) => [a.call, a.ok, typeof a.detail === "string" ? a.detail : undefined])));
    assert.deepEqual(report.answers.find((a) => a.call === "take")?.detail, ["big"], "the msg whose write failed is held, and handed out once");
    assert.equal(report.answers.find((a) => a.call === "hold burst")?.detail, 5_000, "each msg of the burst held during the fault");
    const burst = report.answers.find((a) => a.call === "take burst")?.detail as string[];
    assert.equal(burst.length, 5_000);
    assert.equal(new Set(burst).size, 5_000, "each handed out once");
    assert.equal(report.size, 4);
    assert.equal(report.faultWarnings, 1, report.warnings.join("\n"));
    assert.match(report.warnings[0] ?? "", /could not write .*File too large|EFBIG/);
    assert.match(report.warnings[1] ?? "", /written whole again/);
    assert.equal(report.warnings.length, 2, report.warnings.join("\n"));

    // the child died without closing: the next start has every msg it still held, the one held during the fault too
    const warnings: string[] = [];
    const next = new MemoryDeferStore({ file, clock: () => Date.now() + 120_000, warn: (t) => warnings.push(t) });
    const queue = next.queue("gate-1");
    assert.equal(await queue.size(), 4);
    const ids = (await queue.takeDue(10, 30_000)).map((m) => m.id).sort();
    assert.deepEqual(ids, ["a", "b", "d", "e"]);
    assert.deepEqual(warnings, []);
    next.close();
    assert.deepEqual(readdirSync(dir), ["memory-defer-cfg.jsonl"], "no temporary file left");
  });
});
