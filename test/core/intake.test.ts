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

/** The microtask on which msgs that came in begin. */
const nextMicrotask = (): Promise<void> => new Promise((resolve) => queueMicrotask(resolve));

describe("core/intake: a gate's line of msgs not yet begun", () => {
  it("begins nothing inside the call that brought a msg in, but on the next microtask (a deploy in the same stretch closes the gate first)", async () => {
    const begun: number[] = [];
    const intake = new Intake<number, null>((msg) => { begun.push(msg); }, undefined, 3);
    intake.enter(0, null);
    intake.enter(1, null);
    assert.deepEqual(begun, []);
    await nextMicrotask();
    assert.deepEqual(begun, [0, 1]);
  });

  it("begins at most maxActive msgs at once, and the rest in arrival order as earlier ones finish", async () => {
    const begun: number[] = [];
    const intake = new Intake<number, string>((msg) => { begun.push(msg); }, undefined, 3);
    for (let i = 0; i < 10; i++) intake.enter(i, "done");
    await nextMicrotask();
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

  it("hands each msg its own done", async () => {
    const got: string[] = [];
    const intake = new Intake<number, string>((msg, done) => { got.push(`${msg}:${done}`); }, undefined, 1);
    intake.enter(1, "d1");
    intake.enter(2, "d2");
    await nextMicrotask();
    intake.leave();
    assert.deepEqual(got, ["1:d1", "2:d2"]);
  });

  it("keeps the order over a line long enough to be compacted (20,000 waiting, one active)", async () => {
    const begun: number[] = [];
    const intake = new Intake<number, null>((msg) => { begun.push(msg); }, undefined, 1);
    for (let i = 0; i < 20_000; i++) intake.enter(i, null);
    await nextMicrotask();
    for (let i = 0; i < 10_000; i++) intake.leave();
    for (let i = 20_000; i < 25_000; i++) intake.enter(i, null);
    for (let i = 0; i < 15_000; i++) intake.leave();
    assert.equal(begun.length, 25_000);
    assert.ok(begun.every((msg, i) => msg === i), "in arrival order");
  });

  it("counts its waiting msgs in the backlog, out of it before each begins", async () => {
    const backlog = countingBacklog(1_000);
    const seen: number[] = [];
    const intake = new Intake<number, null>(() => { seen.push(backlog.waiting); }, backlog, 2);
    for (let i = 0; i < 5; i++) intake.enter(i, null);
    assert.equal(backlog.waiting, 5);
    await nextMicrotask();
    assert.equal(backlog.waiting, 3);
    intake.leave();
    // the msg that began was already out of the count: its own store call does not find the queue full because of itself
    assert.deepEqual(seen, [4, 3, 2]);
    intake.flush();
    assert.equal(backlog.waiting, 0);
  });

  it("keeps a msg that arrives past the bound in its place, out of the count, and begins it refused in its turn", async () => {
    const backlog = countingBacklog(4);
    const begun: string[] = [];
    const intake = new Intake<number, null>((msg) => { begun.push(backlog.refused ? `${msg} refused` : String(msg)); }, backlog, 2);
    for (let i = 0; i < 8; i++) intake.enter(i, null);
    // 0..3 count (the queue is full at 4), 4..7 wait refused and count for nothing; 0 and 1 begin on the next microtask
    assert.equal(backlog.overflows, 4, "each refused at the door tells the backlog (the episode's warning)");
    await nextMicrotask();
    assert.deepEqual(begun, ["0", "1"]);
    assert.equal(backlog.waiting, 2);
    assert.equal(intake.waiting, 6);
    for (let i = 0; i < 8; i++) intake.leave();
    assert.deepEqual(begun, ["0", "1", "2", "3", "4 refused", "5 refused", "6 refused", "7 refused"], "in arrival order: a refused msg overtakes none");
    assert.equal(backlog.waiting, 0);
  });

  it("refuses a msg that comes in while the queue is full, even with room to begin it", async () => {
    const backlog = countingBacklog(0);
    const begun: string[] = [];
    const intake = new Intake<number, null>((msg) => { begun.push(backlog.refused ? `${msg} refused` : String(msg)); }, backlog, 2);
    intake.enter(0, null);
    intake.enter(1, null);
    await nextMicrotask();
    assert.deepEqual(begun, ["0 refused", "1 refused"]);
  });

  it("on flush begins every waiting msg, none lost", () => {
    const begun: number[] = [];
    const intake = new Intake<number, null>((msg) => { begun.push(msg); }, undefined, 2);
    for (let i = 0; i < 6; i++) intake.enter(i, null);
    intake.flush();
    assert.deepEqual(begun, [0, 1, 2, 3, 4, 5]);
    assert.equal(intake.waiting, 0);
  });

  it("is idle once every msg that came in has begun and left (a closing gate waits for that)", async () => {
    const intake = new Intake<number, null>(() => undefined, undefined, 2);
    await intake.idle();
    for (let i = 0; i < 5; i++) intake.enter(i, null);
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
