/** The value at quantile q (0..1) by nearest rank; NaN for no samples. */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

export interface LatencySummary {
  p50: number;
  p99: number;
}

export function summarize(samples: Float64Array): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
}
