import type { CompleteEvent, EmbeddedRed } from "../nodeRed/embeddedRed";

type Waiter = (event: CompleteEvent) => void;

const HOOK = "onComplete.sgbench";

/**
 * Hears every node's `done()` through Node-RED's own `onComplete` hook and hands
 * each to whoever waits for that msg id. Only msgs someone waits for are looked at.
 */
export class Completions {
  private readonly waiting = new Map<string, Waiter>();

  private constructor(private readonly red: EmbeddedRed) {}

  static install(red: EmbeddedRed): Completions {
    const completions = new Completions(red);
    red.hooks.add(HOOK, (event) => completions.heard(event));
    return completions;
  }

  expect(msgId: string, waiter: Waiter): void {
    this.waiting.set(msgId, waiter);
  }

  pending(): number {
    return this.waiting.size;
  }

  forgetAll(): void {
    this.waiting.clear();
  }

  uninstall(): void {
    this.red.hooks.remove(HOOK);
    this.waiting.clear();
  }

  private heard(event: CompleteEvent): void {
    const id = event.msg._msgid;
    if (id === undefined) return;
    const waiter = this.waiting.get(id);
    if (!waiter) return;
    this.waiting.delete(id);
    waiter(event);
  }
}
