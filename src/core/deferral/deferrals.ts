import type { DeferInput, DeferQueue, DeferredMsg, DeferResult } from "../defer";
import { DeferPoller } from "../defer";
import type { Lane } from "../sendQueue/sendQueue";
import type { StoreAccess } from "../storeAccess";
import { asStoreFailure } from "../storeFaults";

export type ReleaseHandler = (held: DeferredMsg) => void;

/** How a cap-config's poller takes held msgs (the bench uses the same). A large batch keeps releases on time under load. */
export const DEFER_POLLING = { leaseMs: 30_000, batch: 500, idleMs: 250 } as const;
/** a msg whose gate is not deployed here waits this long, then is offered again */
const ORPHAN_RETRY_MS = 30_000;
const SIZE_REFRESH_MS = 2_000;
/** A hold writes a whole msg, and its answer must not be lost to a short send-path timeout (SPEC §9). */
export const HOLD_TIMEOUT_MS = 2_000;

interface HoldItem {
  entry: DeferInput;
  collapseKey?: string;
}

/**
 * A cap-config's held msgs: the durable queue, the poller that takes what is
 * due (each msg exactly once across instances sharing the queue), and the
 * gates that release them. Knows nothing of Node-RED: a gate registers a
 * handler under its node id.
 */
export class Deferrals {
  private readonly handlers = new Map<string, ReleaseHandler>();
  private readonly sizeListeners = new Set<(held: number) => void>();
  private readonly warnedOrphans = new Set<string>();
  private readonly poller: DeferPoller;
  private sizeTimer: NodeJS.Timeout | undefined;
  private held = 0;
  private closing = false;
  private lastWarning = "";
  private readonly holds: Lane<HoldItem, DeferResult>;

  constructor(readonly queue: DeferQueue, private readonly access: StoreAccess, private readonly warn: (text: string) => void) {
    this.holds = access.lane("hold", (_store, items) => Promise.all(items.map((item) => queue.defer(item.entry, item.collapseKey).catch(asStoreFailure))), {
      bounded: false, timeoutMs: HOLD_TIMEOUT_MS,
    });
    this.poller = new DeferPoller({
      queue, ...DEFER_POLLING,
      onDue: (msgs) => this.release(msgs),
      onError: (err) => this.warnOnce(`defer queue: ${err instanceof Error ? err.message : String(err)}`),
    });
  }

  /** A gate releases its own held msgs from now on (and the poller runs while any gate is registered). */
  register(gate: string, handler: ReleaseHandler): () => void {
    this.handlers.set(gate, handler);
    // on the next turn: the runtime creates a flow's nodes one after another, and every gate should be here first
    setImmediate(() => {
      if (this.handlers.size > 0 && !this.poller.running && !this.closing) this.poller.start();
    });
    if (!this.sizeTimer) {
      this.sizeTimer = setInterval(() => void this.refreshSize(), SIZE_REFRESH_MS);
      this.sizeTimer.unref();
      void this.refreshSize();
    }
    return () => {
      if (this.handlers.get(gate) === handler) this.handlers.delete(gate);
    };
  }

  /** Holds a msg, through the send queue (batched with the other holds of a burst). */
  async hold(entry: DeferInput, collapseKey?: string): Promise<{ id: string; collapsedInto?: string }> {
    const result = await this.access.submit(this.holds, { entry, ...(collapseKey !== undefined ? { collapseKey } : {}) });
    this.poller.wake();
    void this.refreshSize();
    return result;
  }

  /** the msgs the queue held when last asked (every 2 s while a gate releases from it, and after each hold) */
  get heldNow(): number {
    return this.held;
  }

  /** Asks the queue how many msgs it holds now; the last known count when it cannot answer. */
  async currentSize(): Promise<number> {
    await this.refreshSize();
    return this.held;
  }

  onSize(listener: (held: number) => void): () => void {
    this.sizeListeners.add(listener);
    listener(this.held);
    return () => this.sizeListeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.sizeTimer) clearInterval(this.sizeTimer);
    await this.poller.stop();
    await this.queue.close();
  }

  private async release(msgs: DeferredMsg[]): Promise<void> {
    this.lastWarning = "";
    for (const held of msgs) {
      const handler = this.handlers.get(held.gate);
      if (handler) {
        handler(held);
        continue;
      }
      // the gate that holds it is not deployed on this instance: keep it, never drop it
      if (!this.warnedOrphans.has(held.gate)) {
        this.warnedOrphans.add(held.gate);
        this.warn(`held msgs of gate ${held.gate}, which is not deployed here, wait for it (retried every ${ORPHAN_RETRY_MS / 1000} s)`);
      }
      try {
        await this.queue.defer({ ...held, dueAt: Date.now() + ORPHAN_RETRY_MS });
      } catch (err) {
        // not put back: it stays leased and comes back when the lease ends; the batch's released msgs still get acked
        this.warnOnce(`defer queue: could not put back a msg of gate ${held.gate}: ${(err as Error).message}`);
      }
    }
    void this.refreshSize();
  }

  /** The same failure repeats every poll while Redis is down: say it once per outage. */
  private warnOnce(text: string): void {
    if (text === this.lastWarning) return;
    this.lastWarning = text;
    this.warn(text);
  }

  private async refreshSize(): Promise<void> {
    try {
      const held = await this.queue.size();
      if (held === this.held) return;
      this.held = held;
      for (const listener of this.sizeListeners) listener(held);
    } catch {
      // the store's own errors are reported where sends meet them
    }
  }
}
