import assert from "node:assert/strict";
import { EditorComms } from "../support/editorComms";
import { NodeRedProcess } from "../support/nodeRedProcess";
import { exampleFile, nodeNamed, onlyNode, readExample, type FlowNode } from "../support/exampleFlow";

/** One HTTP answer: status, headers and the body as text. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * An example file deployed as it ships, in a real Node-RED process, driven as
 * its user would: HTTP requests to its endpoints, inject buttons pressed
 * through the admin API, results read from the debug sidebar's feed.
 */
export class RunningExample {
  readonly flow: FlowNode[];
  readonly red: NodeRedProcess;
  private comms: EditorComms | undefined;

  constructor(name: string) {
    this.flow = readExample(name);
    this.red = new NodeRedProcess(exampleFile(name), { debugMaxLength: 100_000 });
  }

  async start(): Promise<void> {
    await this.red.start();
    this.comms = await EditorComms.connect(this.red.baseUrl);
  }

  async stop(): Promise<void> {
    this.comms?.close();
    await this.red.stop();
    this.red.cleanUp();
  }

  private get feed(): EditorComms {
    assert.ok(this.comms, "the example is not started");
    return this.comms;
  }

  /** What the debug node `name` showed so far. */
  debug(name: string): Record<string, unknown>[] {
    return this.feed.of(name);
  }

  /** The names of the debug nodes that showed something, in the order they did. */
  debugNames(): string[] {
    return this.feed.debug.map((d) => d.name);
  }

  /** Waits until `count` debug msgs arrived in all. */
  untilDebug(count: number, timeoutMs = 10_000): Promise<void> {
    return this.feed.until(count, timeoutMs);
  }

  /** Presses an inject button; with `output`, waits until one more debug msg arrived. */
  async press(inject: string, output = true): Promise<void> {
    const before = this.feed.debug.length;
    const res = await fetch(`${this.red.baseUrl}/inject/${nodeNamed(this.flow, "inject", inject).id}`, { method: "POST" });
    assert.equal(res.status, 200, `pressing "${inject}"`);
    if (output) await this.feed.until(before + 1);
  }

  async post(path: string, body: string, contentType: string): Promise<Answer> {
    const res = await fetch(`${this.red.baseUrl}${path}`, { method: "POST", headers: { "content-type": contentType }, body });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  async postJson(path: string, body: unknown): Promise<Answer & { json: Record<string, unknown> }> {
    const answer = await this.post(path, JSON.stringify(body), "application/json");
    return { ...answer, json: JSON.parse(answer.text) as Record<string, unknown> };
  }

  /** The recipients on the example's block list (admin API of its one cap-config). */
  async blocked(): Promise<string[]> {
    const config = onlyNode(this.flow, "cap-config").id;
    const res = await fetch(`${this.red.baseUrl}/frequency-cap/${config}/suppressions?count=5000`);
    assert.equal(res.status, 200);
    const page = (await res.json()) as { entries: { recipient: string }[] };
    return page.entries.map((e) => e.recipient).sort();
  }

  /** Waits until the block list holds exactly `recipients` (a control msg changes it without an output to wait for). */
  async untilBlocked(recipients: readonly string[]): Promise<void> {
    const want = [...recipients].sort();
    let got = await this.blocked();
    for (let i = 0; i < 200 && JSON.stringify(got) !== JSON.stringify(want); i++) {
      await new Promise((r) => setTimeout(r, 25));
      got = await this.blocked();
    }
    assert.deepEqual(got, want, "the block list");
  }
}
