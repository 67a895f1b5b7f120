import assert from "node:assert/strict";
import { Intake, type Backlog } from "../../src/core/sendQueue/intake";

/** A backlog that counts what the intake tells it, full at `max` (waiting msgs plus `pending`); `refused` is true while a refused msg begins. */
function countingBacklog(max: number): Backlog & { waiting: number; pending: number; refused: boolean; overflows: number } {
  return {
    waiting: 0,
    pending: 0,
    refused: false,
    overflows: 0,
    full() { return this.waiting + this.pending >= max; },
    waitingMsgs(delta) { this.waiting += delta; },
    overflowed() { this.overflows++; },
    refusing(begin) {
      this.refused = true;
      try {
        begin();
      } finally {
        this.refused = false;
      }
    },
  };
}

describe("core/intake: a gate's line of msgs not yet begun", () => {
  it("begins at most maxActive msgs at once, and the rest in arrival order as earlier ones finish", () => {
    const begun: number[] = [];
    const intake = new Intake<number, string, string>((msg) => { begun.push(msg); }, undefined, 3);
    for (let i = 0; i < 10; i++) intake.enter(i, "send", "done");
    assert.deepEqual(begun, [0, 1, 2]);
    assert.equal(intake.waiting, 7);
    intake.leave();
    assert.deepEqual(begun, [0, 1, 2, 3]);
    intake.leave();
    intake.leave();
    intake.leave();
    assert.deepEqual(begun, [0, 1, 2, 3, 4, 5, 6]);
    for (let i = 0; i < 7; i++) intake.leave();
    assert.deepEqual(begun, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.equal(intake.waiting, 0);
  });

  it("hands each msg its own send and done", () => {
    const got: string[] = [];
    const intake = new Intake<number, string, string>((msg, send, done) => { got.push(`${msg}:${send}:${done}`); }, undefined, 1);
    intake.enter(1, "s1", "d1");
    intake.enter(2, "s2", "d2");
    intake.leave();
    assert.deepEqual(got, ["1:s1:d1", "2:s2:d2"]);
  });

  it("keeps the order over a line long enough to be compacted (20,000 waiting, one active)", () => {
    const begun: number[] = [];
    const intake = new Intake<number, null, null>((msg) => { begun.push(msg); }, undefined, 1);
    for (let i = 0; i < 20_000; i++) intake.enter(i, null, null);
    for (let i = 0; i < 10_000; i++) intake.leave();
    for (let i = 20_000; i < 25_000; i++) intake.enter(i, null, null);
    for (let i = 0; i < 15_000; i++) intake.leave();
    assert.equal(begun.length, 25_000);
    assert.ok(begun.every((msg, i) => msg === i), "in arrival order");
  });

  it("counts its waiting msgs in the backlog, out of it before each begins", () => {
    const backlog = countingBacklog(1_000);
    const seen: number[] = [];
    const intake = new Intake<number, null, null>(() => { seen.push(backlog.waiting); }, backlog, 2);
    for (let i = 0; i < 5; i++) intake.enter(i, null, null);
    assert.equal(backlog.waiting, 3);
    intake.leave();
    // the msg that began was already out of the count: its own store call does not find the queue full because of itself
    assert.deepEqual(seen, [0, 0, 2]);
    intake.flush();
    assert.equal(backlog.waiting, 0);
  });

  it("keeps a msg that arrives past the bound in its place, out of the count, and begins it refused in its turn", () => {
    const backlog = countingBacklog(4);
    const begun: string[] = [];
    const intake = new Intake<number, null, null>((msg) => { begun.push(backlog.refused ? `${msg} refused` : String(msg)); }, backlog, 2);
    for (let i = 0; i < 8; i++) intake.enter(i, null, null);
    // 0 and 1 are active, 2..5 wait and count (the queue is full at 4), 6 and 7 wait refused and count for nothing
    assert.deepEqual(begun, ["0", "1"]);
    assert.equal(backlog.waiting, 4);
    assert.equal(intake.waiting, 6);
    assert.equal(backlog.overflows, 2, "each refused at the door tells the backlog (the episode's warning)");
    for (let i = 0; i < 8; i++) intake.leave();
    assert.deepEqual(begun, ["0", "1", "2", "3", "4", "5", "6 refused", "7 refused"], "in arrival order: a refused msg overtakes none");
    assert.equal(backlog.waiting, 0);
  });

  it("begins a msg at once while fewer than maxActive are begun, full queue or not (the queue refuses its calls itself)", () => {
    const backlog = countingBacklog(0);
    const begun: string[] = [];
    const intake = new Intake<number, null, null>((msg) => { begun.push(backlog.refused ? `${msg} refused` : String(msg)); }, backlog, 2);
    intake.enter(0, null, null);
    intake.enter(1, null, null);
    assert.deepEqual(begun, ["0", "1"]);
  });

  it("on flush begins every waiting msg, none lost", () => {
    const begun: number[] = [];
    const intake = new Intake<number, null, null>((msg) => { begun.push(msg); }, undefined, 2);
    for (let i = 0; i < 6; i++) intake.enter(i, null, null);
    intake.flush();
    assert.deepEqual(begun, [0, 1, 2, 3, 4, 5]);
    assert.equal(intake.waiting, 0);
  });

  it("is idle once every msg that came in has begun and left (a closing gate waits for that)", async () => {
    const intake = new Intake<number, null, null>(() => undefined, undefined, 2);
    await intake.idle();
    for (let i = 0; i < 5; i++) intake.enter(i, null, null);
    let idle = false;
    void intake.idle().then(() => { idle = true; });
    intake.flush();
    for (let i = 0; i < 4; i++) intake.leave();
    await Promise.resolve();
    assert.equal(idle, false, "one msg is still in progress");
    intake.leave();
    await Promise.resolve();
    assert.equal(idle, true);
  });
});
