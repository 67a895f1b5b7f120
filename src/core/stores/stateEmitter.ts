import type { StoreState } from "./admissionStore";

/** Holds a store's connection state and tells listeners when it changes. */
export class StateHolder {
  private current: StoreState;
  private readonly listeners = new Set<(state: StoreState) => void>();

  constructor(initial: StoreState) {
    this.current = initial;
  }

  get(): StoreState {
    return this.current;
  }

  set(next: StoreState): void {
    if (next === this.current) return;
    this.current = next;
    for (const listener of this.listeners) listener(next);
  }

  subscribe(listener: (state: StoreState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
