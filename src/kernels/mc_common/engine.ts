/**
 * Monte Carlo option pricing under geometric Brownian motion: the plain-TypeScript (f64) reference
 * engine. Work is split by Philox stream, so any range of streams can run anywhere (a CPU worker, a
 * CUDA block, a WGSL workgroup) and the partial sums combine into the same estimate.
 *
 * Sampling layout (the same in the CPU, CUDA and WGSL kernels):
 *   european: stream s draws one block (4 normals); normal k of stream s feeds sample 4s+k.
 *   asian:    stream s is sample s; it draws ceil(steps/4) blocks, normal j drives monitoring step j.
 * With antithetic variates a sample is the average payoff of the path pair (z, -z), so 2 paths.
 */
import { blockNormals, keyFromSeed, streamBlock } from './philox.js';

export interface McSpec {
  readonly kind: 'european' | 'asian';
  readonly call: boolean;
  readonly spot: number;
  readonly strike: number;
  /** log-price drift and volatility per monitoring step: (r - q - vol^2/2) dt and vol sqrt(dt). */
  readonly mu: number;
  readonly sigma: number;
  /** Monitoring steps (1 for european). */
  readonly steps: number;
  readonly antithetic: boolean;
  /** Number of samples (paths, or path pairs when antithetic). */
  readonly samples: number;
  readonly seed: number;
  readonly discount: number;
}

export interface McPartial {
  /** Sum and sum of squares of undiscounted sample payoffs, and the sample count. */
  sum: number;
  sumSq: number;
  count: number;
}

export interface McTerms {
  kind: 'european' | 'asian';
  right: 'call' | 'put';
  spot: number;
  strike: number;
  rate: number;
  vol: number;
  maturity: number;
  dividend: number;
  steps: number;
  paths: number;
  antithetic: boolean;
  seed: number;
}

export function mcSpec(t: McTerms): McSpec {
  const steps = t.kind === 'european' ? 1 : t.steps;
  const dt = t.maturity / steps;
  return {
    kind: t.kind,
    call: t.right === 'call',
    spot: t.spot,
    strike: t.strike,
    mu: (t.rate - t.dividend - 0.5 * t.vol * t.vol) * dt,
    sigma: t.vol * Math.sqrt(dt),
    steps,
    antithetic: t.antithetic,
    samples: t.antithetic ? Math.ceil(t.paths / 2) : t.paths,
    seed: t.seed,
    discount: Math.exp(-t.rate * t.maturity),
  };
}

/** How many Philox streams cover all samples. */
export function streamCount(spec: McSpec): number {
  return spec.kind === 'european' ? Math.ceil(spec.samples / 4) : spec.samples;
}

export function paths(spec: McSpec): number {
  return spec.samples * (spec.antithetic ? 2 : 1);
}

/** Partial sums over streams [first, end). */
export function mcRange(spec: McSpec, first: number, end: number): McPartial {
  const key = keyFromSeed(spec.seed);
  const words = new Uint32Array(4);
  const z = new Float64Array(4);
  const { spot, strike, mu, sigma, call, antithetic, steps } = spec;
  let sum = 0;
  let sumSq = 0;
  let count = 0;
  const payoff = (s: number): number => (call ? Math.max(s - strike, 0) : Math.max(strike - s, 0));
  if (spec.kind === 'european') {
    for (let s = first; s < end; s++) {
      streamBlock(key, s, 0, words);
      blockNormals(words, z);
      const lanes = Math.min(4, spec.samples - 4 * s);
      for (let k = 0; k < lanes; k++) {
        let p = payoff(spot * Math.exp(mu + sigma * z[k]!));
        if (antithetic) p = 0.5 * (p + payoff(spot * Math.exp(mu - sigma * z[k]!)));
        sum += p;
        sumSq += p * p;
      }
      count += lanes;
    }
  } else {
    for (let s = first; s < end; s++) {
      let logS = Math.log(spot);
      let logSb = logS;
      let acc = 0;
      let accb = 0;
      for (let j = 0; j < steps; j++) {
        if ((j & 3) === 0) {
          streamBlock(key, s, j >>> 2, words);
          blockNormals(words, z);
        }
        const dz = sigma * z[j & 3]!;
        logS += mu + dz;
        acc += Math.exp(logS);
        if (antithetic) {
          logSb += mu - dz;
          accb += Math.exp(logSb);
        }
      }
      let p = payoff(acc / steps);
      if (antithetic) p = 0.5 * (p + payoff(accb / steps));
      sum += p;
      sumSq += p * p;
      count++;
    }
  }
  return { sum, sumSq, count };
}

export function combine(parts: readonly McPartial[]): McPartial {
  const out = { sum: 0, sumSq: 0, count: 0 };
  for (const p of parts) {
    out.sum += p.sum;
    out.sumSq += p.sumSq;
    out.count += p.count;
  }
  return out;
}

/** Discounted mean and its standard error. */
/**
 * Adds the rows of a partial-sums tensor ([rows, 3]: sum, sum of squares, count) to `total`. A plain
 * function with local accumulators: V8 optimizes it after a call or two, where the same loop written
 * inline in the async workload (accumulating into object fields) ran ~50 ns a row for many calls
 * (0.6 ms of a 1 ms 2^26-path price on the H200).
 */
export function addPartialRows(total: McPartial, rows: ArrayLike<number>): void {
  let sum = 0;
  let sumSq = 0;
  let count = 0;
  const n = rows.length - (rows.length % 3);
  for (let r = 0; r < n; r += 3) {
    sum += rows[r]!;
    sumSq += rows[r + 1]!;
    count += rows[r + 2]!;
  }
  total.sum += sum;
  total.sumSq += sumSq;
  total.count += count;
}

export function estimate(spec: McSpec, total: McPartial): { price: number; stdError: number } {
  const n = total.count;
  const mean = total.sum / n;
  const variance = n > 1 ? Math.max(0, (total.sumSq - n * mean * mean) / (n - 1)) : 0;
  return { price: spec.discount * mean, stdError: spec.discount * Math.sqrt(variance / n) };
}
