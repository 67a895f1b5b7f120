/**
 * Which gates of a cap-config hold msgs, and whether any instance runs them:
 * the msgs of a gate that runs nowhere (removed from the flow, a disabled
 * tab) are left alone until their deadline, then dropped and reported.
 */
export interface GateRegistry {
  /** these gates run here (call at least every BEAT_MS while they do) */
  beat(gates: readonly string[]): Promise<void>;
  /** gates whose queues may hold msgs and which no instance runs */
  orphans(): Promise<string[]>;
  /** forgets a gate whose queue is empty and which still runs nowhere */
  forget(gate: string): Promise<void>;
  /** every gate it knows of (their queues may hold msgs), running or not */
  known(): Promise<string[]>;
}

/** How often a cap-config says which gates it runs, and how long that counts. */
export const BEAT_MS = 10_000;
export const BEAT_TTL_MS = 60_000;

/** One process (the memory store): a gate runs nowhere when it is not registered here. */
export class LocalGateRegistry implements GateRegistry {
  private running = new Set<string>();

  constructor(private readonly gatesHolding: () => string[]) {}

  async beat(gates: readonly string[]): Promise<void> {
    this.running = new Set(gates);
  }

  async orphans(): Promise<string[]> {
    return this.gatesHolding().filter((gate) => !this.running.has(gate));
  }

  async forget(): Promise<void> {
    return undefined;
  }

  async known(): Promise<string[]> {
    return [...new Set([...this.running, ...this.gatesHolding()])];
  }
}
