import type { CompleteEvent, EmbeddedRed } from "../nodeRed/embeddedRed";

type Waiter = (event: CompleteEvent) => void;

/** Hears every msg a node completes. */
export interface NodeWatcher {
  heard(event: CompleteEvent): void;
}

const HOOK = "onComplete.sgbench";

/**
 * Hears every node's `done()` through Node-RED's own `onComplete` hook and hands
 * each to whoever waits for that msg id, or for every msg of that node. Only
 * msgs someone waits for are looked at.
 */
export class Completions {
  private readonly waiting = new Map<string, Waiter>();
  private readonly byNode = new Map<string, NodeWatcher>();

  private constructor(private readonly red: EmbeddedRed) {}

  static install(red: EmbeddedRed): Completions {
    const completions = new Completions(red);
    red.hooks.add(HOOK, (event) => completions.heard(event));
    return completions;
  }

  expect(msgId: string, waiter: Waiter): void {
    this.waiting.set(msgId, waiter);
  }

  /**
   * Every msg node `nodeId` completes, until the returned function is called.
   * A burst of 100,000 waits on one node: a waiter per msg id would cost the
   * row a Map entry and a closure per msg (about a tenth of its CPU).
   */
  watchNode(nodeId: string, watcher: NodeWatcher): () => void {
    this.byNode.set(nodeId, watcher);
    return () => this.byNode.delete(nodeId);
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
    this.byNode.clear();
  }

  private heard(event: CompleteEvent): void {
    const ofNode = this.byNode.size === 0 ? undefined : this.byNode.get(event.node.id);
    if (ofNode) {
      ofNode.heard(event);
      return;
    }
    const id = event.msg._msgid;
    if (id === undefined) return;
    const waiter = this.waiting.get(id);
    if (!waiter) return;
    this.waiting.delete(id);
    waiter(event);
  }
}
