/** Nearest-rank quantile of an ascending list (p in (0, 1]): the value at least a fraction p of runs reach. */
export function quantile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}
