import assert from "node:assert/strict";
import { connectAsync } from "mqtt";
import { RunningExample } from "./runningExample";
import type { FlowNode } from "../support/exampleFlow";

/**
 * examples/ad-eligibility.json in a real Node-RED, over real HTTP and MQTT,
 * sent what its step comments ①–④ tell a user to send: the curl and
 * mosquitto_pub lines are read off the canvas, so a line that would not work
 * fails here. The recipient and event ids are made this run's own (other
 * suites publish to the same broker topic).
 */
/** a curl line of the canvas: to `$NODE_RED`, the address its "export NODE_RED=…" comment sets */
const CURL = /^curl --json '(.+)' "\$NODE_RED(\/\S+)"$/;
const PUB = /^mosquitto_pub -t (\S+) -m '(.+)'$/;

type Answer = { eligible: Record<string, boolean>; remaining: Record<string, number>; blocked: Record<string, { cap_id?: string }>; error?: string };

/** The command comments matching `pattern`, in the order they stand on the canvas (top to bottom). */
function commands(flow: readonly FlowNode[], pattern: RegExp): RegExpExecArray[] {
  return flow.filter((n) => n.type === "comment" && pattern.test(String(n.name)))
    .sort((a, b) => Number(a.y) - Number(b.y))
    .map((n) => pattern.exec(String(n.name)) as RegExpExecArray);
}

describe("examples/ad-eligibility.json in a real Node-RED, sent what its steps say", function () {
  this.timeout(60_000);
  const example = new RunningExample("ad-eligibility.json");
  before(() => example.start());
  after(() => example.stop());

  it("①–④: both ads eligible; three impressions (one sent twice) fill ad1's day; a bad candidate is answered 400 naming it", async () => {
    const viewer = `steps-${process.pid}-${Date.now()}`;
    const asks = commands(example.flow, CURL);
    const pubs = commands(example.flow, PUB);
    assert.equal(asks.length, 2, "① and ④ each show a curl line");
    assert.equal(pubs.length, 1, "② shows a mosquitto_pub line");
    const [ask, bad] = asks as [RegExpExecArray, RegExpExecArray];
    const [, topic, message] = pubs[0];

    const send = async (command: RegExpExecArray) => {
      const body = { ...(JSON.parse(command[1]) as Record<string, unknown>), recipient: viewer };
      const answer = await example.postJson(command[2], body);
      return { status: answer.status, body: answer.json as Answer };
    };

    const first = await send(ask);
    assert.equal(first.status, 200);
    assert.deepEqual([first.body.eligible, first.body.remaining, first.body.blocked], [{ ad1: true, ad2: true }, { ad1: 3, ad2: 3 }, {}], "① both, 3 left each");

    const broker = await connectAsync("mqtt://127.0.0.1:1883", { clientId: `sendgate-steps-${process.pid}-${Date.now()}` });
    try {
      const impression = JSON.parse(message) as Record<string, unknown>;
      assert.equal(impression.event_id, "ev-1");
      for (const event of ["ev-1", "ev-2", "ev-2", "ev-3"]) {
        await broker.publishAsync(topic, JSON.stringify({ ...impression, recipient: viewer, event_id: `${viewer}-${event}` }), { qos: 1 });
      }
    } finally {
      await broker.endAsync();
    }

    let again = await send(ask);
    for (let i = 0; i < 100 && again.body.eligible.ad1 !== false; i++) {
      await new Promise((r) => setTimeout(r, 50));
      again = await send(ask);
    }
    assert.deepEqual([again.body.eligible, again.body.remaining], [{ ad1: false, ad2: true }, { ad1: 0, ad2: 3 }], "③ ad1 full, ad2 3 left");
    assert.equal(again.body.blocked.ad1?.cap_id, "ad-daily", "③ blocked by ad-daily");

    const refused = await send(bad);
    assert.equal(refused.status, 400);
    assert.match(String(refused.body.error), /candidates\[1\]: must be an object/, `④ names the candidate: ${String(refused.body.error)}`);
  });
});
