/**
 * Full-revaluation scenarios for VaR under correlated multi-asset GBM (the f64 reference, also the CPU
 * kernel). Scenario s draws its shocks from Philox stream s (blocks of four normals), correlates them
 * with the Cholesky factor, moves each asset to the horizon and reprices each position (options by
 * Black–Scholes at the remaining maturity). Loss = value today - value at the horizon.
 */
import { blackScholes } from '../mc_common/black-scholes.js';
import { blockNormals, keyFromSeed, streamBlock } from '../mc_common/philox.js';
import type { PortfolioArrays } from './layout.js';

export function positionValue(pf: PortfolioArrays, p: number, spot: number, elapsed: number): number {
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

export function portfolioValue(pf: PortfolioArrays, spots: ArrayLike<number>, elapsed: number): number {
  let v = 0;
  for (let p = 0; p < pf.positions; p++) v += positionValue(pf, p, spots[pf.posAsset[p]!]!, elapsed);
  return v;
}

/** Losses of scenarios [first, end) into `out[0 .. end-first)`. */
export function scenarioLosses(
  pf: PortfolioArrays,
  horizon: number,
  seed: number,
  v0: number,
  first: number,
  end: number,
  out: { [i: number]: number },
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
