import type { CapRule } from "./rules";

export type RulesProviderState = "ok" | "stale" | "unavailable";

/**
 * Where a cap-config's rules come from. `rulesFor` answers synchronously when
 * it can (inline rules, a fresh cache entry), so the hot path only waits when
 * a rule list really has to be loaded.
 */
export interface RulesProvider {
  readonly source: "inline" | "postgres";
  rulesFor(org: string, channel: string): readonly CapRule[] | Promise<readonly CapRule[]>;
  state(): RulesProviderState;
  onStateChange(listener: (state: RulesProviderState) => void): () => void;
  /** rules that live elsewhere (a database): resolves once it was first reached, or throws after `timeoutMs` (the admin API waits on it) */
  whenReady?(timeoutMs: number): Promise<unknown>;
  close(): Promise<void>;
}

/** Rules written in the cap-config node: fixed until the next deploy. */
export class InlineRules implements RulesProvider {
  readonly source = "inline" as const;

  constructor(readonly rules: readonly CapRule[]) {}

  rulesFor(): readonly CapRule[] {
    return this.rules;
  }

  state(): RulesProviderState {
    return "ok";
  }

  onStateChange(): () => void {
    return () => undefined;
  }

  async close(): Promise<void> {
    return undefined;
  }
}
