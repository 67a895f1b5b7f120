import assert from "node:assert/strict";
import { setFlagsFromString } from "node:v8";
import { keptStandIns } from "../../src/core/keptShapes";
import { OutputOrder } from "../../src/core/outputOrder";
import { ClaimCall } from "../../src/core/caps/claimCall";
import type { CapDecision } from "../../src/core/caps/decisions";
import { claimToken } from "../../src/core/store/counterEntry";
import { parseSend } from "../../src/core/send";
import { StoreUnavailableError } from "../../src/core/errors";
import { MsgTurn, type TurnShared } from "../../src/nodes/gate/turn";
import { ClaimVerdict } from "../../src/nodes/gate/claimVerdict";
import type { AdmittedMsg } from "../../src/nodes/gate/refusal";
import type { CapService } from "../../src/core/capService";
import { claimTables } from "../../src/redis/scriptArgs";
import type { ClaimHistory } from "../../src/core/history/claimHistory";
import { collectGarbage } from "../support/gc";

// V8's own test of hidden classes; natives syntax is read when a function is compiled, so it is turned on first
setFlagsFromString("--allow-natives-syntax");
const haveSameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean;

const RULES = { channels: ["sms", "email"], defaultOrg: "default", requireTier: false };

/**
 * Real instances, made and used as the gate makes and uses them, after the
 * instances before them are gone: each must have the map its class's
 * stand-in keeps, or the stand-in keeps nothing the gate's code was compiled for.
 */
const REAL: readonly { name: string; make(): object[] }[] = [
  {
    name: "a msg's place in its recipient's line, and its turn",
    make() {
      const order = new OutputOrder();
      const first = order.place();
      const second = order.place();
      const ended: unknown[] = [];
      const shared = { outlet: { send: () => Promise.resolve(), answer: () => undefined }, counts: undefined, status: { error: () => undefined }, leave: () => undefined, verdicts: undefined } as unknown as TurnShared;
      const turn = new MsgTurn(shared, first, { _msgid: "m1", payload: "hi" }, (err) => ended.push(err));
      const later = new MsgTurn(shared, second, { _msgid: "m2", payload: "hi" }, (err) => ended.push(err));
      turn.lineUp({ org: "default", recipient: "+15550001" });
      later.lineUp({ org: "default", recipient: "+15550001" });
      turn.send([{ _msgid: "m1" }, null, null]);
      turn.end();
      later.end(new Error("to Catch"));
      assert.equal(ended.length, 2);
      return [first, second, turn, later];
    },
  },
  {
    name: "a claim's call and the gate's verdict on it",
    make() {
      const send = parseSend({ recipient: "+15550002", channel: "sms", messageId: "m3" }, RULES);
      const told: CapDecision[] = [];
      const verdict = new ClaimVerdict((_msg, _turn, _service, _send, decision) => {
        told.push(decision);
        return undefined;
      }, { _msgid: "m3" } as AdmittedMsg, { end: () => undefined } as unknown as MsgTurn, {} as CapService, send);
      const counters = [{ field: "c1", windowMs: 60_000, max: 3 }];
      const call = new ClaimCall({ failed: (_org: string, _channel: string, err: StoreUnavailableError) => err }, send, [], verdict, "sg:c:default:+15550002", send.messageId, claimToken(), counters);
      call.resolve({ allowed: true, nowMs: Date.now(), counters: [] });
      assert.equal(told.length, 1);
      return [call, verdict];
    },
  },
  {
    name: "a claim call's argument tables",
    make() {
      const { limits, histories, counters, shapes } = claimTables();
      const hourly = { field: "c1", windowMs: 3_600_000, max: 5 };
      const daily = { field: "c2", windowMs: 86_400_000, max: 20, startMs: 1_700_000_000_000, resetAt: 1_700_086_400_000 };
      shapes.index([hourly, daily], undefined);
      const history: ClaimHistory = { keep: 10, lifetimeMs: 86_400_000, after: "|frequency-cap-gate|0||c1|" };
      shapes.index([hourly], history);
      limits.args();
      histories.args();
      return [limits, histories, shapes, counters];
    },
  },
];

describe("kept shapes: the gate's per-msg classes keep their maps through an idle spell", () => {
  it("each stand-in has the map of real instances made after the ones before them were collected", () => {
    const standIns = keptStandIns();
    const covered = new Set<unknown>();
    for (const real of REAL) {
      // the instances made now are gone, as a burst's are once the gate is idle
      real.make();
      for (let i = 0; i < 4; i++) collectGarbage();
      for (const instance of real.make()) {
        const standIn = standIns.find((s) => s.constructor === instance.constructor);
        assert.ok(standIn, `${real.name}: no stand-in keeps the shape of ${instance.constructor.name}`);
        assert.ok(haveSameMap(standIn, instance), `${real.name}: the stand-in of ${instance.constructor.name} has a map of its own`);
        covered.add(instance.constructor);
      }
    }
    const untested = standIns.filter((s) => !covered.has(s.constructor)).map((s) => s.constructor.name);
    assert.deepEqual(untested, [], "stand-ins whose maps no real instance here is compared with");
  });

  it("compares maps truly: instances of one class with fields added in another order have maps of their own", () => {
    const a: Record<string, number> = {};
    a.x = 1;
    a.y = 2;
    const b: Record<string, number> = {};
    b.y = 2;
    b.x = 1;
    assert.equal(haveSameMap(a, b), false);
    const c: Record<string, number> = {};
    c.x = 3;
    c.y = 4;
    assert.equal(haveSameMap(a, c), true);
  });
});
