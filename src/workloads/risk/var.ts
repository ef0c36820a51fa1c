/**
 * Value-at-risk and expected shortfall from scenario losses. The scenario engine (full revaluation
 * under correlated GBM) lives with the mc_var kernels; it is re-exported here for library users.
 */
export { portfolioValue, positionValue, scenarioLosses } from '../../kernels/mc_var/engine.js';

export interface RiskFigures {
  /** Loss not exceeded with probability `confidence`. */
  valueAtRisk: number;
  /** Mean loss in the tail at and beyond the VaR. */
  expectedShortfall: number;
  meanLoss: number;
  worstLoss: number;
}

/** Empirical VaR (the ceil(c n)-th smallest loss) and ES (mean of the losses from there up). Sorts `losses`. */
export function riskFigures(losses: Float64Array | Float32Array, confidence: number): RiskFigures {
  losses.sort();
  const n = losses.length;
  const k = Math.min(n - 1, Math.max(0, Math.ceil(confidence * n) - 1));
  let tail = 0;
  for (let i = k; i < n; i++) tail += losses[i]!;
  let mean = 0;
  for (let i = 0; i < n; i++) mean += losses[i]!;
  return {
    valueAtRisk: losses[k]!,
    expectedShortfall: tail / (n - k),
    meanLoss: mean / n,
    worstLoss: losses[n - 1]!,
  };
}
