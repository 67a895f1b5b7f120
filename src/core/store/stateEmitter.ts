import type { StoreState } from "./admissionStore";

/** Holds a state and tells listeners when it changes. */
export class StateHolderOf<S> {
  private current: S;
  private readonly listeners = new Set<(state: S) => void>();

  constructor(initial: S) {
    this.current = initial;
  }

  get(): S {
    return this.current;
  }

  set(next: S): void {
    if (next === this.current) return;
    this.current = next;
    for (const listener of this.listeners) listener(next);
  }

  subscribe(listener: (state: S) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}

/** A store's connection state. */
export class StateHolder extends StateHolderOf<StoreState> {}
