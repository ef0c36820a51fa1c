/**
 * Value-at-risk and expected shortfall by full revaluation under correlated multi-asset GBM.
 * Scenario s draws its asset shocks from Philox stream s (blocks of four normals), correlates them
 * with the Cholesky factor, moves every asset to the horizon and reprices every position
 * (options by Black–Scholes with the remaining maturity). Loss = value today - value at the horizon.
 */
import { blackScholes } from './black-scholes.js';
import { blockNormals, keyFromSeed, streamBlock } from './philox.js';
import type { Portfolio } from './portfolio.js';

export function positionValue(pf: Portfolio, p: number, spot: number, elapsed: number): number {
  const kind = pf.posKind[p]!;
  const a = pf.posAsset[p]!;
  if (kind === 0) return pf.posQuantity[p]! * spot;
  const price = blackScholes({
    spot,
    strike: pf.posStrike[p]!,
    rate: pf.rate,
    vol: pf.vol[a]!,
    maturity: pf.posMaturity[p]! - elapsed,
    dividend: pf.dividend[a]!,
    right: kind === 1 ? 'call' : 'put',
  });
  return pf.posQuantity[p]! * price;
}

export function portfolioValue(pf: Portfolio, spots: ArrayLike<number>, elapsed: number): number {
  let v = 0;
  for (let p = 0; p < pf.positions; p++) v += positionValue(pf, p, spots[pf.posAsset[p]!]!, elapsed);
  return v;
}

/** Losses of scenarios [first, end) into `out[0 .. end-first)`. */
export function scenarioLosses(
  pf: Portfolio,
  horizon: number,
  seed: number,
  v0: number,
  first: number,
  end: number,
  out: Float64Array,
): void {
  const d = pf.assets;
  const key = keyFromSeed(seed);
  const blocks = Math.ceil(d / 4);
  const z = new Float64Array(blocks * 4);
  const words = new Uint32Array(4);
  const spots = new Float64Array(d);
  const sq = Math.sqrt(horizon);
  for (let s = first; s < end; s++) {
    for (let b = 0; b < blocks; b++) {
      streamBlock(key, s, b, words);
      blockNormals(words, z, 4 * b);
    }
    for (let a = 0; a < d; a++) {
      let w = 0;
      for (let k = 0; k <= a; k++) w += pf.chol[a * d + k]! * z[k]!;
      const v = pf.vol[a]!;
      spots[a] =
        pf.spot[a]! * Math.exp((pf.drift[a]! - pf.dividend[a]! - 0.5 * v * v) * horizon + v * sq * w);
    }
    out[s - first] = v0 - portfolioValue(pf, spots, horizon);
  }
}

export interface RiskFigures {
  /** Loss not exceeded with probability `confidence`. */
  valueAtRisk: number;
  /** Mean loss in the tail at and beyond the VaR. */
  expectedShortfall: number;
  meanLoss: number;
  worstLoss: number;
}

/** Empirical VaR (the ceil(c n)-th smallest loss) and ES (mean of the losses from there up). Sorts `losses`. */
export function riskFigures(losses: Float64Array, confidence: number): RiskFigures {
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
