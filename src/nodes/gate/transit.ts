import type { NodeMessage } from "node-red";
import type { Whose } from "./parking";
import type { Outputs } from "./outputs";

/** The part of Node-RED's hooks this needs: one onReceive hook, added while a close is watched. */
export interface ReceiveHooks {
  add(hookId: string, handler: (event: ReceiveEvent) => void): void;
  remove(hookId: string): void;
}

/** What Node-RED's onReceive hook is told as a msg reaches a node. */
export interface ReceiveEvent {
  msg: NodeMessage & { _msgid?: string };
  destination: { id: string; node?: unknown };
}

/** A msg of the gate's that a delivery dropped: the output it left by, and whose it is. */
export interface LostInTransit {
  msg: NodeMessage;
  output: number;
  whose: Whose | undefined;
}

/**
 * How many turns of the event loop (setImmediate ticks) a sent msg is kept
 * as maybe in transit: Node-RED delivers what a node sends on the next
 * check phase, so two ticks see it delivered; a third is margin.
 */
const TICKS = 3;

let watchers = 0;

/** A node Node-RED has closed has no input handler left: what reaches it now is dropped. */
function closedNode(node: unknown): boolean {
  const n = node as { _inputCallback?: unknown; _inputCallbacks?: unknown } | undefined;
  return n === undefined || (n._inputCallback == null && n._inputCallbacks == null);
}

/**
 * What a gate sent that Node-RED may not have delivered yet. Node-RED hands
 * a sent msg to the next node a turn of the event loop later; a deploy that
 * stops that node in between (its close removes its input handler) drops the
 * msg, silently. So a gate keeps what it sent in the last few turns (two
 * slots per send in a flat list, nothing per msg beyond), and as it closes it
 * watches those msgs' deliveries (an onReceive hook, only while it closes):
 * one that reaches a node that has closed is lost, and the gate keeps it for
 * its next deployment. One delivered before the close, or to a node that
 * still runs (a partial deploy; a gate still closing takes its last msgs),
 * is not.
 */
export class InTransit {
  /** per tick, newest first: out, whose of each send, flat */
  private ticks: unknown[][] = [[], [], []];
  private ticking = false;
  private readonly tick = (): void => {
    const ticks = this.ticks;
    ticks.unshift(ticks.pop() as unknown[]);
    ticks[0].length = 0;
    this.ticking = ticks.some((t) => t.length > 0);
    if (this.ticking) setImmediate(this.tick);
  };

  constructor(private readonly wires: () => readonly (readonly string[])[]) {}

  /** A send: kept as maybe in transit for a few turns of the loop. */
  sent(out: Outputs, whose: Whose | undefined): void {
    this.ticks[0].push(out, whose);
    if (!this.ticking) {
      this.ticking = true;
      setImmediate(this.tick);
    }
  }

  /**
   * Watches the deliveries of what may still be in transit as the gate closes:
   * `lost` is told each msg that reaches a closed node. Resolves once they have
   * all been delivered (a few turns of the loop).
   */
  watch(hooks: ReceiveHooks | undefined, lost: (item: LostInTransit) => void): Promise<void> {
    const pending = this.pending();
    if (pending.size === 0 || !hooks) return afterTicks(TICKS);
    const hookId = `onReceive.sendgate-transit-${++watchers}`;
    hooks.add(hookId, (event) => {
      const msgid = event.msg?._msgid;
      const candidates = msgid === undefined ? undefined : pending.get(msgid);
      if (!candidates) return;
      const to = event.destination.id;
      const open = (c: Candidate): boolean => c.wires.has(to) && !c.seen.has(to);
      // the first wire gets the msg itself, the others a copy with the same _msgid
      const c = candidates.find((o) => o.msg === event.msg && open(o)) ?? candidates.find(open);
      if (!c) return;
      c.seen.add(to);
      if (!c.lost && closedNode(event.destination.node)) {
        c.lost = true;
        lost({ msg: c.msg, output: c.output, whose: c.whose });
      }
    });
    return afterTicks(TICKS).then(() => hooks.remove(hookId));
  }

  /** What was sent in the last few turns, by _msgid: the msgs that may not have been delivered. */
  private pending(): Map<string, Candidate[]> {
    const byId = new Map<string, Candidate[]>();
    const wires = this.wires();
    for (const tick of this.ticks) {
      for (let i = 0; i < tick.length; i += 2) {
        const out = tick[i] as Outputs;
        const whose = tick[i + 1] as Whose | undefined;
        const outputs = Array.isArray(out) ? out : [out];
        outputs.forEach((msg, output) => {
          const to = wires[output];
          if (!msg || !to || to.length === 0) return;
          const msgid = (msg as { _msgid?: string })._msgid;
          if (msgid === undefined) return;
          const candidate: Candidate = { msg, output, whose, wires: new Set(to), seen: new Set(), lost: false };
          const list = byId.get(msgid);
          if (list) list.push(candidate);
          else byId.set(msgid, [candidate]);
        });
      }
    }
    return byId;
  }
}

interface Candidate extends LostInTransit {
  wires: ReadonlySet<string>;
  seen: Set<string>;
  lost: boolean;
}

/** Resolves after `n` turns of the event loop (setImmediate ticks). */
export function afterTicks(n: number): Promise<void> {
  return new Promise((resolve) => {
    let left = n;
    const step = (): void => {
      if (--left <= 0) resolve();
      else setImmediate(step);
    };
    setImmediate(step);
  });
}
