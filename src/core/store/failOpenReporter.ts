/**
 * Counts fail-open sends and warns about them without flooding the log:
 * the first per (org, channel), then at most one summary every `quietMs`.
 */
export class FailOpenReporter {
  private total = 0;
  private readonly lastWarned = new Map<string, { at: number; since: number }>();

  constructor(private readonly warn: (text: string) => void, private readonly quietMs = 10_000) {}

  get count(): number {
    return this.total;
  }

  /** A fail-open that is warned about elsewhere (an overload episode). */
  countQuietly(): void {
    this.total++;
  }

  report(org: string, channel: string, reason: string): void {
    this.total++;
    const key = `${org}\u0000${channel}`;
    const now = Date.now();
    const last = this.lastWarned.get(key);
    if (last && now - last.at < this.quietMs) {
      last.since++;
      return;
    }
    const suppressed = last && last.since > 0 ? ` (${last.since} more since the last warning)` : "";
    this.lastWarned.set(key, { at: now, since: 0 });
    this.warn(`frequency caps failed open for org "${org}", channel "${channel}": ${reason}${suppressed}`);
  }
}
