/** The value at quantile q (0..1) by nearest rank; NaN for no samples. */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

/** The median of several runs by `value` (of an even count, the higher middle one), with the lowest and highest beside it. */
export function medianBy<T>(runs: readonly T[], value: (run: T) => number): { median: T; lowest: T; highest: T } {
  if (runs.length === 0) throw new Error("no runs to take a median of");
  const sorted = [...runs].sort((a, b) => value(a) - value(b));
  return { median: sorted[Math.floor(sorted.length / 2)], lowest: sorted[0], highest: sorted[sorted.length - 1] };
}

export interface LatencySummary {
  p50: number;
  p99: number;
}

export function summarize(samples: Float64Array): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
}
